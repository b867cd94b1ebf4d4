#!/bin/bash
# Session 2026-11-30 (fifty-third), issue 20, the BiTA target: lookup+bita with the adapter's tree at the shapes a
# CPU can pay for (`1`: its top 1, a 4-wide block; `2`: the top 2, 6 wide, chosen for the adapter alone; `3`: the
# top 3, 8 wide): behind prompt lookup the adapter drafts only where the context has no 2-gram match, so the best
# shape there may differ. Greedy, 30 prompts, our plain decoding as the baseline in the same run. From the worktree.
#   nohup benchmarks/campaigns/bench-2026-11-30r-lookup-bita-shapes.sh COMMIT > /work/runs/bench-30r.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "lookup+bita shapes"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "lookup+bita[1]:$B,lookup+bita[2]:$B,lookup+bita[3]:$B" \
  --out benchmarks/results/lookup_bita_shapes_2026-11-30r.json --markdown benchmarks/LOOKUP_BITA_SHAPES_2026-11-30r.md
echo "== done $(date -Is)"
