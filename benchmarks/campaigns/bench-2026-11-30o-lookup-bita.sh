#!/bin/bash
# Session 2026-11-30 (fifty-second), issue 20, the BiTA target: `lookup+bita` (prompt lookup first, the BiTA adapter
# elsewhere; lookup's chain carries the adapter's masks) with at most 2 and 4 lookup tokens a step, against BiTA
# alone and prompt lookup alone, the adapter at the CPU's shape `2`, greedy, 30 prompts (the 12 of the sweep 30n
# among them), our plain decoding as the baseline in the same run. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30o-lookup-bita.sh COMMIT > /work/runs/bench-30o.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "lookup+bita"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "bita[2]:$B,prompt-lookup,lookup-2+bita[2]:$B,lookup-4+bita[2]:$B" \
  --out benchmarks/results/lookup_bita_2026-11-30o.json --markdown benchmarks/LOOKUP_BITA_2026-11-30o.md
echo "== done $(date -Is)"
