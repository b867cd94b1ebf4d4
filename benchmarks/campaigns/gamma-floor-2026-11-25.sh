#!/bin/bash
# Session 2026-11-25 (eighteenth), issues 21 and 20: after the γ policy's call-cost curve stopped pricing
# every wider block at the 2-token cost and drafting costs became a curve over rows (1c7741e), and the curve is
# flat for one doubling past the widest call measured (5e286df; a first start at 9d3c353 was stopped after
# round 0 at c = 1 showed the adaptive policy hardly drafting):
#  1. continuous batching at c = 1 and 16, three rotated rounds, the adaptive policy beside vLLM's fixed
#     cut-off (γ 4, off from 4 rows) and plain twice: the comparison of CONTINUOUS_BATCHING_ROUNDS_2026-11-25.md;
#  2. the results page (benchmarks/results_page.sh) on main's code (the last one ran at c7ea8f4, with the
#     since-reverted aging).
# From the worktree at the commit given as $1, the CPU to itself (the data job is paused while it runs);
# jemalloc with its default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serving $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 16 --rounds 3 --cutoff 4:4 \
  --out benchmarks/results/continuous_batching_rounds_2026-11-25c.json \
  --markdown benchmarks/CONTINUOUS_BATCHING_ROUNDS_2026-11-25c.md
echo "== results page $(date -Is)"
benchmarks/results_page.sh
echo "== done $(date -Is) (exit $?)"
