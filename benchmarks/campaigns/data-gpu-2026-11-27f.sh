#!/bin/bash
# Session 2026-11-27 (twenty-ninth), issue 20, for the next lease: fresh data first. Every GPU-written batch so far
# (1400000-2800000) has been trained on by each drafter, so the lease's first call writes new self-intents batches
# on the GPU (the settings of data-gpu-2026-11-27.sh: bf16, requests and answers of up to 128 tokens), half of
# them steered with --opener to translation and summaries (the openers of data-2026-11-27f-translate-summarize.sh),
# and leaves each finished batch in $W/data, where train-gpu-2026-11-27d.sh's run phase (the next call, same warm
# machine) caches and trains on it. Batches are COUNT requests (4,032: ~90 s a process on an H200, by the rate of
# the 2026-11-27 data lease);
# WORKERS processes share the GPU, worker w taking jobs w, w + WORKERS, ... of the interleaved list; a batch cut
# off by the deadline stays in the answer cache (resumable on the CPU under the same key) and is not trained on.
# The answer cache comes back in 15 MB parts, to be committed under benchmarks/data. Calls:
#   bash benchmarks/campaigns/data-gpu-2026-11-27f.sh stage         # carry .whl .gpu/a
#   bash benchmarks/campaigns/data-gpu-2026-11-27f.sh stage         # carry .gpu/b
#   bash benchmarks/campaigns/data-gpu-2026-11-27f.sh stage         # carry .gpu/init-head
#   bash benchmarks/campaigns/data-gpu-2026-11-27f.sh run 240       # carry .gpu/meta .gpu/init-tandem
#   DRAFT_EXTRA=0 bash benchmarks/campaigns/train-gpu-2026-11-27d.sh run 540   (smollm2-135m-draft in the tree)
# (the tree moved aside as for train-gpu-2026-11-27d.sh; ~40 s of start-up, 240 + 540 s of runs and the stage calls
# fit 900 s of device time, with a call to fetch any bring-back part left out of a call's files).
# Carry no .gpu/data: the run phase trains on all of $W/data. DEVICE=cpu PY=.venv/bin/python SITE=<the venv's
# site-packages> WORKERS=1 BATCH=8 COUNT=8 GENERAL=2900000 STEERED=5000000 dry-runs it here (done 2026-11-27 on the
# Xeon: one batch of each kind written, gzipped into $W/data and packed for the bring-back, in 46 s).
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?stage or run}
DEADLINE=${2:-240}
W=${WORK:-/tmp/gpu-train}
DATA=$W/data
WORKERS=${WORKERS:-4}
BATCH=${BATCH:-2048}
COUNT=${COUNT:-4032}
read -r -a GENERAL <<< "${GENERAL:-2900000 3000000 3100000 3200000}"
read -r -a STEERED <<< "${STEERED:-5000000 5100000 5200000 5300000}"
OPENERS=("Translate German to English:" "Translate this German sentence into English:"
  "Translate the following text from German into English:" "Translate into English:"
  "Translate French to English:" "Translate Spanish to English:" "Summarize:" "Summarize this news article:"
  "Summarize the following article:" "Write a short summary of this story:"
  "Give me the key points of this report:" "TL;DR:")
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=4
source "$(dirname "$0")/gpu-lease-common.sh"
gpu_open
gpu_target_ready

JOBS=()
for i in "${!GENERAL[@]}"; do JOBS+=("self-intents:${GENERAL[$i]}"); [ -n "${STEERED[$i]:-}" ] && JOBS+=("steered:${STEERED[$i]}"); done
worker() {  # jobs w, w + WORKERS, ...; a finished batch is gzipped into $DATA as KIND-SEED.answers.jsonl.gz
  local w=$1 i kind seed log rc steer
  for ((i = w; i < ${#JOBS[@]}; i += WORKERS)); do
    kind=${JOBS[$i]%%:*} seed=${JOBS[$i]#*:} log=$W/logs/data-$kind-$seed.log steer=()
    [ "$kind" = steered ] && for o in "${OPENERS[@]}"; do steer+=(--opener "$o"); done
    [ "$(left)" -gt 30 ] || return
    echo "[w$w] $kind $seed $(date -Is)"
    timeout $(($(left) - 20)) $PY -m specdec data answers --device "$DEVICE" --dtype bf16 --batch-size "$BATCH" \
      --max-new-tokens 128 --max-prompt-tokens 768 --prompts self-intents --count "$COUNT" --seed "$seed" \
      --request-tokens 128 --cache-dir "$W/hf" "${steer[@]}" 2>&1 | grep -v -E "it/s\]|s/it\]|Loading weights" > "$log"
    rc=${PIPESTATUS[0]}; echo "[w$w] $kind $seed exit $rc $(date -Is)"; tail -2 "$log"
    [ "$rc" = 0 ] || return
    gzip -c "$(grep 'answer tokens: ' "$log" | tail -1 | sed 's/.*answer tokens: //')" > "$DATA/$kind-$seed.answers.jsonl.gz"
  done
}
for w in $(seq 0 $((WORKERS - 1))); do worker "$w" > "$W/logs/data-worker-$w.log" 2>&1 & done
wait
stamp "workers done"; cat "$W"/logs/data-worker-*.log; ls -la "$DATA"
mkdir -p "${OUT:-$W/out}"; (cd "$W/hf" && tar czf - answers) | split -b 15M - "${OUT:-$W/out}/answers.tgz.part-"
ls -la "${OUT:-$W/out}"
stamp done
