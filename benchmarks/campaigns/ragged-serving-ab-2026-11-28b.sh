#!/bin/bash
# Session 2026-11-28 (thirty-sixth), CAMPAIGN next run 5: ragged-serving-ab-2026-11-28.sh again, for rows kept
# right-aligned with long rows attended alone ($2: a6e13f6) against the plans of b043efd alone ($1: 75730d0). Plain
# decoding served in continuous batches (`bench serving`, no drafter: plain and its repeat) at c = 16 and 64,
# alternating old, new, old, new, each from its own worktree, the CPU to itself (a data job stopped); jemalloc with
# its default decay. Records to results/ragged_serving_ab_2026-11-28b_*, pages to /work/runs, one per run;
# `ragged_serving_summary.py` sets them side by side.
#   benchmarks/campaigns/ragged-serving-ab-2026-11-28b.sh OLD NEW
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
unset MALLOC_CONF
R=/work/main/benchmarks/results
source "$(dirname "$0")/ab-worktrees-common.sh"
ab_worktrees "$1" "$2"
for round in 1 2; do
  for tree in old new; do
    ab_banner $tree $round
    (cd /work/bench-$tree && PYTHONPATH=/work/bench-$tree/src specdec bench serving --drafters "" \
      --concurrency ${CONCURRENCY:-16 64} --out $R/ragged_serving_ab_2026-11-28b_${tree}_r$round.json \
      --markdown /work/runs/ragged_serving_ab_b_${tree}_r$round.md)
    echo "== exit $? $(date -Is)"
  done
done
