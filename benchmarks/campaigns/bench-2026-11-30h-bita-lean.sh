#!/bin/bash
# Session 2026-11-30 (forty-ninth), issue 20, the BiTA target: the same bench as bench-2026-11-30g-bita-shallow.sh
# after BiTA's blocks (given embeddings for the mask tokens) took the engine's lean path (they went through
# transformers' forward): the shipped adapter at its chosen shape `2`, and `1`, `3`, straight, greedy, 30 prompts,
# our plain decoding as the baseline in the same run. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30h-bita-lean.sh COMMIT > /work/runs/bench-30h.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita lean"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "bita:$B,bita[1]:$B,bita[3]:$B,bita[straight]:$B" \
  --out benchmarks/results/bita_lean_2026-11-30h.json --markdown benchmarks/BITA_LEAN_2026-11-30h.md
echo "== done $(date -Is)"
