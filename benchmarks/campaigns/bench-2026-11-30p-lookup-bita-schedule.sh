#!/bin/bash
# Session 2026-11-30 (fifty-second), issue 20, the BiTA target: `lookup+bita` with lookup's length on transformers'
# heuristic schedule (from N/2 up to N: at most 8 by default, and 12), against BiTA alone and prompt lookup alone;
# the adapter at the CPU's shape `2`, greedy, 30 prompts, our plain decoding as the baseline in the same run. The
# fixed 4 tokens a step of the run before (30o) ran 1.43x. From the worktree at the given commit (a1caced; the
# schedule was reverted after this run).
#   nohup benchmarks/campaigns/bench-2026-11-30p-lookup-bita-schedule.sh COMMIT > /work/runs/bench-30p.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "lookup+bita schedule"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "bita[2]:$B,prompt-lookup,lookup+bita[2]:$B,lookup-12+bita[2]:$B" \
  --out benchmarks/results/lookup_bita_schedule_2026-11-30p.json \
  --markdown benchmarks/LOOKUP_BITA_SCHEDULE_2026-11-30p.md
echo "== done $(date -Is)"
