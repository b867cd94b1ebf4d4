#!/bin/bash
# Session 2026-11-30 (fifty-second), issue 20, deliverable 6's sampled row for `--method bita`'s new default,
# `lookup+bita` (prompt lookup first, the adapter at its measured shape elsewhere), against the adapter alone and
# prompt lookup alone, T 0.8, top-p 0.95, the coupled rule, seeded per prompt (every text must equal seeded plain
# decoding's), the default Spec-Bench subset, 30 prompts, our plain decoding as the baseline in the same run.
# From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30q-lookup-bita-sampled.sh COMMIT > /work/runs/bench-30q.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "lookup+bita sampled"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --temperature 0.8 --top-p 0.95 --verify coupled \
  --drafters "bita:$B,prompt-lookup,lookup+bita:$B" \
  --out benchmarks/results/lookup_bita_sampled_2026-11-30q.json \
  --markdown benchmarks/LOOKUP_BITA_SAMPLED_2026-11-30q.md
echo "== done $(date -Is)"
