#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20, for the next lease; ran in the twenty-eighth (`run 580`, record
# gpu_train_2026-11-27e.json) after a CPU dry run (DEVICE=cpu, a DATA folder of 2 x 40 answers, PY/SITE the venv's,
# MIN_FREE_GB=2, CACHE_UNTIL=100, BATCH=4, DRAFT_EXTRA=10). train-gpu-2026-11-27b.sh with the
# three trained drafters side by side on the one GPU (each used a fraction of it at batch 32 there):
#   - the EAGLE-3 head from the shipped smollm2-135m-eagle3 (8,499-token vocabulary), lr 1e-4;
#   - the Tandem secondary from the shipped smollm2-135m-tandem, lr 1.5e-4;
#   - the distilled draft from the shipped smollm2-135m-draft (`train tandem --architecture draft`), DRAFT_EXTRA
#     steps more than Tandem (the 1,079 Tandem had on the last lease), so the two are at equal tokens again.
# Caches as before (hidden states 0, 2, 15, 27, 29), checked in one Python process after a `sync` (the last lease
# lost ~95 s between its last cache and its first step). A 30-step calibration of all three at once sizes each
# run to end CLOSE seconds before the DEADLINE. Bring-back: the head's best/ (~51 MB), Tandem's and the draft's
# best exported (bf16, own tensors only: ~15 MB each), logs, in 15 MB parts (six).
# The tracked tree is ~170 MB against 64 MiB a call: move src/specdec/models/drafts, benchmarks/results and
# benchmarks/data out of the working tree, then
#   bash benchmarks/campaigns/train-gpu-2026-11-27d.sh stage        # carry .whl .gpu/a
#   bash benchmarks/campaigns/train-gpu-2026-11-27d.sh stage        # carry .gpu/b .gpu/data
#   bash benchmarks/campaigns/train-gpu-2026-11-27d.sh stage        # carry .gpu/init-head
#   (put src/specdec/models/drafts/smollm2-135m-draft back: the draft loads by name)
#   bash benchmarks/campaigns/train-gpu-2026-11-27d.sh run DEADLINE # carry .gpu/meta .gpu/init-tandem
# .gpu/init-head/head.tar: the shipped smollm2-135m-eagle3 folder; .gpu/init-tandem/tandem.tar: the shipped
# smollm2-135m-tandem folder; .gpu/data: the batches' answers (1500000, 1700000-2000000, 2600000-2800000: what
# the drafters have seen least); the rest as in train-gpu-2026-11-27b.sh. Staging, the GGUF and the cache workers
# are gpu-lease-common.sh's (sourced).
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?stage or run}
DEADLINE=${2:-540}
W=${WORK:-/tmp/gpu-train}
DATA=${DATA:-$W/data}
PRIMARY_WORKERS=${PRIMARY_WORKERS:-5}
CACHE_UNTIL=${CACHE_UNTIL:-360}
CLOSE=${CLOSE:-45}
DRAFT_EXTRA=${DRAFT_EXTRA:-1079}
BATCH=${BATCH:-32}  # smaller only for the CPU dry run
MIN_FREE_GB=${MIN_FREE_GB:-20}
HIDDEN_LAYERS=0,2,15,27,29
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=3
source "$(dirname "$0")/gpu-lease-common.sh"
gpu_open
HEAD=$W/init/smollm2-135m-eagle3 TANDEM=$W/init/smollm2-135m-tandem
[ -d src/specdec/models/drafts/smollm2-135m-draft ] || { echo "put smollm2-135m-draft back in the tree"; exit 1; }
$PY -c "from specdec.models import load_model; m = load_model('smollm2-135m', dtype='bf16', device='$DEVICE', \
cache_dir='$W/hf'); print('loaded', m.source, m.model.dtype, m.model.device); \
print('draft', load_model('smollm2-135m-draft', cache_dir='$W/hf').source)" || exit 1
stamp "models ready"; ls "$HEAD" "$TANDEM"

for w in $(seq 0 $((PRIMARY_WORKERS - 1))); do (cache_worker "$w" > "$W/logs/cache-$w.log" 2>&1) & done
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt "$CACHE_UNTIL" ]; do sleep 2; done
pkill -f "specdec data primary"; wait
sync; stamp "synced"
mapfile -t COMPLETE < <($PY - "$W"/caches/*/ <<'PY'
import sys
from specdec.training.primary_cache import PrimaryCache
for folder in sys.argv[1:]:
    try:
        PrimaryCache(folder)  # every shard written (one stopped while exiting is complete too)
    except Exception as err:  # noqa: BLE001 - an incomplete cache is left out, and said so
        print(f"left out {folder}: {err}", file=sys.stderr)
    else:
        print(folder)
PY
)
CACHES=(); for c in "${COMPLETE[@]}"; do CACHES+=(--cache "$c"); done
stamp "caches: ${#COMPLETE[@]} complete"
cat "$W"/logs/cache-*.log | grep -E "sequences|exit|Error|error" | tail -20
[ ${#COMPLETE[@]} -gt 0 ] || exit 1

train() {  # NAME OUTPUT STEPS EVAL_EVERY [SECONDS: a time limit, the run ending on a checkpoint]
  local common=(--target smollm2-135m --cache-dir "$W/hf" "${CACHES[@]}" --steps "$3" --batch-size "$BATCH" --warmup 50
    --eval-every "$4" --save-every "$4" --bf16 auto --output "$2" ${5:+--time-limit "$5"})
  case $1 in
    head) $PY -m specdec train eagle3 "${common[@]}" --init-from "$HEAD" --max-batch-tokens 8192 --ttt-steps 4 \
            --lr 1e-4 --eval-sequences 80 ;;
    tandem) $PY -m specdec train tandem "${common[@]}" --init-from "$TANDEM" --architecture tandem --preset distil \
            --lr 1.5e-4 --eval-sequences 64 ;;
    draft) $PY -m specdec train tandem "${common[@]}" --init-from smollm2-135m-draft --architecture draft \
            --preset distil --lr 1.5e-4 --eval-sequences 64 ;;
  esac 2>&1 | tr "\r" "\n" | grep -v -E "it/s\]|s/it\]"  # tqdm.write shares a line with the bar
}
rate() {  # s/step of a calibration run, timed from step 10 to step 30
  $PY -c "import json; e = {r['step']: r['elapsed_s'] for r in map(json.loads, open('$1/log.jsonl')) \
if 'elapsed_s' in r}; print((e[30] - e[10]) / 20)"
}
for name in head tandem draft; do (train $name "$W/calib-$name" 30 1000 > "$W/logs/calib-$name.log") & done
wait
declare -A RATE STEPS
for name in head tandem draft; do RATE[$name]=$(rate "$W/calib-$name") || { tail "$W/logs/calib-$name.log"; exit 1; }; done
budget=$(( $(left) - CLOSE - 60 ))  # 60 s: start-up, the first evaluation and the last save, each run
for name in head tandem draft; do STEPS[$name]=$($PY -c "print(max(50, int($budget / (${RATE[$name]} * 1.15))))"); done
# Equal tokens: the draft trains DRAFT_EXTRA steps more than Tandem; Tandem gives up steps if the draft cannot fit
# (when the draft cannot catch up within the lease, both train their own fit and the record says so: the head
# must not lose its lease to the comparison)
if [ $(( STEPS[draft] - DRAFT_EXTRA )) -ge 50 ]; then
  STEPS[tandem]=$(( STEPS[tandem] < STEPS[draft] - DRAFT_EXTRA ? STEPS[tandem] : STEPS[draft] - DRAFT_EXTRA ))
  STEPS[draft]=$(( STEPS[tandem] + DRAFT_EXTRA ))
else
  echo "the draft cannot catch up $DRAFT_EXTRA steps this lease: Tandem and the draft not at equal tokens" | tee -a "$W/logs/plan.txt"
fi
# Each run also stops on a checkpoint at a time limit (fifty-third session: `--time-limit` for all three trainers),
# so a run slower than its calibration keeps its last steps; the kill below stays the fallback.
limit=$(( $(left) - CLOSE - 60 ))  # 60 s: loading the target and the caches before a run's clock starts
for name in head tandem draft; do
  echo "$name: ${RATE[$name]} s/step (three at once); ${STEPS[$name]} steps" | tee -a "$W/logs/plan.txt"
  (train $name "$W/run-$name" "${STEPS[$name]}" $(( STEPS[$name] / 6 )) "$limit" > "$W/logs/train-$name.log") &
done
while [ -n "$(jobs -r)" ] && [ "$(left)" -gt "$CLOSE" ]; do sleep 2; done
[ -n "$(jobs -r)" ] && echo "stopped at the deadline" | tee -a "$W/logs/plan.txt" && pkill -f "specdec train"
wait
stamp "trained"; for name in head tandem draft; do tail -1 "$W/logs/train-$name.log"; done

mkdir -p "$W/back/caches" "$W/back/head/best"
for c in "$W"/caches/*/meta.json; do cp "$c" "$W/back/caches/$(basename "$(dirname "$c")").json"; done
cp -r "$W/logs" "$W/back/"
for name in head tandem draft; do
  mkdir -p "$W/back/$name" && cp "$W/run-$name/log.jsonl" "$W/run-$name/train_config.json" "$W/back/$name/"
  cp "$W/calib-$name/log.jsonl" "$W/back/$name/calib_log.jsonl"
done
cp "$W/run-head/best/config.json" "$W/run-head/best/model.safetensors" "$W/back/head/best/"
$PY -m specdec train export --draft "$W/run-tandem/best" --name smollm2-135m-tandem --dest "$W/back/tandem/export"
$PY -m specdec train export --draft "$W/run-draft/best" --name smollm2-135m-draft --dest "$W/back/draft/export"
mkdir -p "${OUT:-$W/out}"; (cd "$W/back" && tar cf - .) | split -b 15M - "${OUT:-$W/out}/back.tar.part-"
ls -la "${OUT:-$W/out}"
stamp done
