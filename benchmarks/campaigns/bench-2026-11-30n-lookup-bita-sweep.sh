#!/bin/bash
# Session 2026-11-30 (fifty-second), issue 20, the BiTA target: prompt lookup in front of the BiTA adapter
# (`lookup+bita`, new), a short sweep of how many lookup tokens a step carries (each adds itself and a mask to the
# block), against BiTA alone and prompt lookup alone; the adapter at the CPU's shape `2`, greedy, 12 prompts (two a
# task: exploratory, to choose the default; the 30-prompt run is 30o), our plain decoding as the baseline in the
# same run. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30n-lookup-bita-sweep.sh COMMIT > /work/runs/bench-30n.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "lookup+bita sweep"
B=smollm2-135m-bita
specdec bench spec --per-task 2 --max-new-tokens 128 --no-hf \
  --drafters "bita[2]:$B,prompt-lookup,lookup-2+bita[2]:$B,lookup-4+bita[2]:$B,lookup-7+bita[2]:$B" \
  --out benchmarks/results/lookup_bita_sweep_2026-11-30n.json --markdown benchmarks/LOOKUP_BITA_SWEEP_2026-11-30n.md
echo "== done $(date -Is)"
