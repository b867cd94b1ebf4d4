#!/bin/bash
# Session 2026-11-25 (seventeenth), issues 21 and 20: after the adaptive γ's acceptance estimates age during plain
# steps (the commit given as $1):
#  1. continuous batching at c = 1 and 16, three rotated rounds, adaptive beside vLLM's fixed cut-off (γ 4, off
#     from 4 rows) and plain twice (beside CONTINUOUS_BATCHING_ROUNDS_2026-11-25.md, before aging);
#  2. the results page (benchmarks/results_page.sh), last run at aaf39c1.
# From the worktree at $1, the CPU to itself; jemalloc with its default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serving $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 16 --rounds 3 --cutoff 4:4 \
  --out benchmarks/results/continuous_batching_rounds_2026-11-25b.json \
  --markdown benchmarks/CONTINUOUS_BATCHING_ROUNDS_2026-11-25b.md
echo "== results page $(date -Is)"
benchmarks/results_page.sh
echo "== done $(date -Is) (exit $?)"
