#!/bin/bash
# Session 2026-11-25 (eighteenth), issue 21: the rounds comparison of CONTINUOUS_BATCHING_ROUNDS_2026-11-25.md
# (c = 1 and 16, three rotated rounds, the adaptive γ beside vLLM's fixed cut-off γ 4 off from 4 rows, plain
# twice) after the γ cost curve's changes (1c7741e, 5e286df, 61310c4). gamma-floor-2026-11-25.sh was to run it
# first but found a stopped run's partial files and went straight to the results page. Waits for the other
# campaign scripts of the session; from the worktree at the commit given as $1, the CPU to itself (the data
# job paused); jemalloc with its default decay.
set -uo pipefail
while pgrep -f "gamma-floor-2026-11-25.sh|cb-2026-11-25.sh|serve-load-2026-11-25.sh" > /dev/null; do sleep 30; done
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serving rounds $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 16 --rounds 3 --cutoff 4:4 \
  --out benchmarks/results/continuous_batching_rounds_2026-11-25c.json \
  --markdown benchmarks/CONTINUOUS_BATCHING_ROUNDS_2026-11-25c.md
echo "== done $(date -Is) (exit $?)"
