#!/bin/bash
# Session 2026-12-01 (fifty-eighth), issue 20, for the next lease's data call: ShareGPT's real user requests with
# every turn answered by the target itself (deliverable 2's multi-turn data; no session has written it: the CPU
# sessions answered first turns only, ~1 M answer tokens, never committed). ../shared/data/train/sharegpt holds
# 9,453 conversations, 21,156 user turns (6,662 reach a second round, 5,041 a third): ~2.5 M answer tokens of up
# to 128, half of them in later rounds, whose context holds the target's own earlier answers.
# WORKERS processes share the GPU, worker w answering conversations w, w + WORKERS, ... (a shard file of its own)
# round by round (`data answers --prompts conversations:…`), bf16, prompts of up to 768 tokens. Each round's
# answers land in $DATA as sharegpt-w<w>-r<r>.answers.jsonl.gz, where train-gpu-2026-11-27d.sh's run phase (the
# next call, same warm machine) caches and trains on them beside any batches carried in .gpu/data. None of them
# comes back to be committed (they hold ShareGPT's text as token ids): the call brings back one archive of the
# manifests and logs. Sizing: at the 2026-11-27 lease's ~3,500 answer tokens a second a process, four processes
# answer everything in ~180 s; a worker cut off by the deadline leaves its finished rounds in the answer cache
# (resumable under the same key) but none in $DATA. The tracked tree (~200 MB) moved aside as for
# train-gpu-2026-11-27d.sh (src/specdec/models/drafts, benchmarks/results, benchmarks/data), then:
#   bash benchmarks/campaigns/data-gpu-2026-12-01-sharegpt.sh stage     # carry .whl .gpu/a
#   bash benchmarks/campaigns/data-gpu-2026-12-01-sharegpt.sh stage     # carry .gpu/b
#   bash benchmarks/campaigns/data-gpu-2026-12-01-sharegpt.sh run 200   # carry .gpu/meta .gpu/sharegpt
# with .gpu/sharegpt/prompts.jsonl.gz copied from ../shared/data/train/sharegpt (2.5 MB). DEVICE=cpu
# PY=.venv/bin/python SITE=<the venv's site-packages> WORKERS=2 BATCH=8 LIMIT=6 NEW_TOKENS=16 dry-runs it here.
# Since the fifty-ninth session the CPU's answers to every round are committed without ShareGPT's text
# (benchmarks/data/sharegpt-rounds): with those files copied into .gpu/sharegpt beside prompts.jsonl.gz and
# WORKERS=1 BATCH=64 (the CPU run's one shard, so the same cache keys), `data answers --answers-from` rebuilds every
# round from them in about a minute and generates nothing; with four shards their keys differ and it answers as
# before.
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?stage or run}
DEADLINE=${2:-200}
W=${WORK:-/tmp/gpu-train}
DATA=$W/data
WORKERS=${WORKERS:-4}
BATCH=${BATCH:-2048}
LIMIT=${LIMIT:-100000}  # conversations a worker
NEW_TOKENS=${NEW_TOKENS:-128}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=4
source "$(dirname "$0")/gpu-lease-common.sh"
gpu_open
[ -f "$W/sharegpt/prompts.jsonl.gz" ] || { echo "carry .gpu/sharegpt (../shared/data/train/sharegpt)"; exit 1; }
gpu_target_ready

worker() {  # conversations w, w + WORKERS, ... (LIMIT at most), every round; each round's answers gzipped into $DATA
  local w=$1 shard=$W/sharegpt/shard-$w.jsonl log=$W/logs/data-sharegpt-$w.log rc r=0 file
  zcat "$W/sharegpt/prompts.jsonl.gz" | awk -v w="$w" -v n="$WORKERS" -v k="$LIMIT" '(NR - 1) % n == w && c++ < k' > "$shard"
  echo "[w$w] $(wc -l < "$shard") conversations $(date -Is)"
  local from=(); [ -f "$W/sharegpt/answer-ids-manifest.json" ] && from=(--answers-from "$W/sharegpt")
  timeout $(($(left) - 20)) $PY -m specdec data answers "${from[@]}" --device "$DEVICE" --dtype bf16 --batch-size "$BATCH" \
    --max-new-tokens "$NEW_TOKENS" --max-prompt-tokens 768 --prompts "conversations:$shard" --count "$LIMIT" \
    --cache-dir "$W/hf" 2>&1 | grep -v -E "it/s\]|s/it\]|Loading weights" > "$log"
  rc=${PIPESTATUS[0]}; echo "[w$w] exit $rc $(date -Is)"; tail -4 "$log"
  [ "$rc" = 0 ] || return
  while read -r file; do
    r=$((r + 1)); gzip -c "$file" > "$DATA/sharegpt-w$w-r$r.answers.jsonl.gz"
  done < <(grep 'answer tokens: ' "$log" | sed 's/.*answer tokens: //')
}
for w in $(seq 0 $((WORKERS - 1))); do worker "$w" > "$W/logs/data-worker-$w.log" 2>&1 & done
wait
stamp "workers done"; cat "$W"/logs/data-worker-*.log; ls -la "$DATA"
mkdir -p "${OUT:-$W/out}"
tar czf "${OUT:-$W/out}/sharegpt-record.tgz" -C "$W" logs $(cd "$W" && ls hf/answers/manifest-*.json)
ls -la "${OUT:-$W/out}"
stamp done
