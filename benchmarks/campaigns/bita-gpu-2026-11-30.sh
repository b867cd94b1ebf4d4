#!/bin/bash
# Session 2026-11-30 (forty-ninth), issue 20, for the next lease (CAMPAIGN next run 1, first): the shipped BiTA
# adapter continued on the chat batches (`train bita --init-from smollm2-135m-bita` over every committed
# benchmarks/data answers file: the target's own answers to self-written requests, no evaluation prompt), at the
# batch of the adapter's own lease (128 sequences x 64 mask groups, ~0.65 s a step on an H100 then), lr 3e-3 cosine,
# bf16, ending on a checkpoint CLOSE seconds before DEADLINE. On this CPU the same run moved ~1 M SAR tokens an hour
# (train-2026-11-30-bita-chat.sh); the lease's ~400 s are ~15 M. Since the fiftieth session a step runs the sequence
# without autograd and back-propagates through the masks only (on the CPU ~1/3 of the memory in about the same time;
# not measured on a GPU); best/ is chosen for the shape a CPU runs (`--select-shape 2`).
# Back: best/ and the logs (well under 1 MB), then
# here: `eval bita --shapes 1,2,3` against the shipped adapter on heldout-9900000, and the bench if it is better.
# Staging as train-gpu-2026-11-27d.sh (gpu-lease-common.sh): move src/specdec/models/drafts (all but
# smollm2-135m-bita, which loads by name), benchmarks/results and benchmarks/data out of the working tree, put the
# committed batches' answers in .gpu/data (`cp benchmarks/data/*/answers-*.jsonl.gz .gpu/data/`, ~30 MB), then
#   bash benchmarks/campaigns/bita-gpu-2026-11-30.sh stage           # carry .whl .gpu/a
#   bash benchmarks/campaigns/bita-gpu-2026-11-30.sh stage           # carry .gpu/b .gpu/meta .gpu/data
#   bash benchmarks/campaigns/bita-gpu-2026-11-30.sh run DEADLINE    # $OUT gets back.tar
# CPU dry run: WORK=/tmp/bita-dry DEVICE=cpu PY=.venv/bin/python SITE=<the venv's site-packages>
# DATA=<a folder of answers files> BATCH=2 MASK_GROUPS=4 STEPS=2 bash ... run 150 (dry-run 2026-11-30 on the tree at fa87156: 20 s, back.tar 2.2 MB)
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?stage or run}
DEADLINE=${2:-420}
W=${WORK:-/tmp/gpu-bita}
DATA=${DATA:-$W/data}
CLOSE=${CLOSE:-30}
BATCH=${BATCH:-128}
MASK_GROUPS=${MASK_GROUPS:-64}
STEPS=${STEPS:-600}
SELECT=${SELECT:-2}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
source "$(dirname "$0")/gpu-lease-common.sh"
gpu_open
ANSWERS=("$DATA"/*.jsonl.gz)
[ -f "${ANSWERS[0]}" ] || { echo "no answers in $DATA"; exit 1; }
stamp "${#ANSWERS[@]} answers files"
LIMIT=$(( $(left) - CLOSE - 40 ))  # 40 s: model loading, the answers, the last save
$PY -m specdec train bita --init-from smollm2-135m-bita $(printf -- '--answers %s ' "${ANSWERS[@]}") \
  --output "$W/run" --steps "$STEPS" --batch-size "$BATCH" --groups "$MASK_GROUPS" --lr 3e-3 --warmup 20 \
  --eval-every 50 --save-every 50 --eval-sequences 128 --select-shape "$SELECT" --bf16 on --resume \
  --time-limit "$LIMIT" \
  --cache-dir "$W/hf" 2>&1 | grep -v -E "it/s\]|s/it\]"
stamp "trained"
mkdir -p "${OUT:-$W/out}"
tar cf "${OUT:-$W/out}/back.tar" -C "$W/run" best log.jsonl train_config.json
ls -la "${OUT:-$W/out}"
stamp done
