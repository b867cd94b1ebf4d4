#!/bin/bash
# Session 2026-11-30 (forty-ninth), issue 20, deliverable 6's sampled row for BiTA at its new measured shape (`2`)
# against the straight chain, T 0.8, top-p 0.95, the coupled rule, seeded per prompt (every text must equal seeded
# plain decoding's), on the default Spec-Bench subset, 30 prompts, our plain decoding as the baseline in the same
# run. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30j-bita-sampled.sh COMMIT > /work/runs/bench-30j.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita sampled"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --temperature 0.8 --top-p 0.95 --verify coupled \
  --drafters "bita:$B,bita[straight]:$B" \
  --out benchmarks/results/bita_sampled_2026-11-30j.json --markdown benchmarks/BITA_SAMPLED_2026-11-30j.md
echo "== done $(date -Is)"
