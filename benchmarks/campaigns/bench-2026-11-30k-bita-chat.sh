#!/bin/bash
# Session 2026-11-30 (fiftieth), issue 20, the BiTA target: the shipped adapter against its continuation on the chat
# batches (`train-2026-11-30-bita-chat.sh`, the candidate `eval bita` preferred, copied to CANDIDATE), both at the
# shape `2` that runs on a CPU, greedy, 30 prompts, our plain decoding as the baseline in the same run. From the
# worktree at the given commit; the run records each adapter's weights digest.
#   CANDIDATE=/work/runs/bita-chat-candidate nohup benchmarks/campaigns/bench-2026-11-30k-bita-chat.sh COMMIT \
#     > /work/runs/bench-30k.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita chat"
C=${CANDIDATE:-/work/runs/bita-chat-candidate}
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "bita[2]:smollm2-135m-bita,bita[2]:$C" \
  --out benchmarks/results/bita_chat_2026-11-30k.json --markdown benchmarks/BITA_CHAT_2026-11-30k.md
echo "== done $(date -Is)"
