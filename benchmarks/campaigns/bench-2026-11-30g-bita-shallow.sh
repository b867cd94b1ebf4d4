#!/bin/bash
# Session 2026-11-30 (forty-ninth), issue 20, the BiTA target: the shipped adapter with the shape `eval bita` now
# chooses on this machine (`2`: top-2 at depth 1, one mask a group, a 6-wide block) against the shapes the results
# page ran (straight: 16 wide, efficient: 52) and `1`, on the default Spec-Bench subset, greedy, our plain decoding
# as the baseline in the same run. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30g-bita-shallow.sh COMMIT > /work/runs/bench-30g.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita shallow"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "bita:$B,bita[1]:$B,bita[straight]:$B,bita[efficient]:$B" \
  --out benchmarks/results/bita_shallow_2026-11-30g.json --markdown benchmarks/BITA_SHALLOW_2026-11-30g.md
echo "== done $(date -Is)"
