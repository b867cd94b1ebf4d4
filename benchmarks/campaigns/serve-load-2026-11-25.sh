#!/bin/bash
# Session 2026-11-25 (eighteenth), issue 22: the load test at c = 1 and 32 after the γ policy's cost curve
# follows the CPU's dip between block widths and drafting costs are a curve over rows (1c7741e); the last run,
# SERVE_LOAD_2026-11-24e.md, measured a since-reverted change (24d: c = 1 1.21x, c = 32 0.96x). The default
# drafter, three rounds, a 20-stream burst. Waits for cb-2026-11-25.sh; from the worktree at the commit given
# as $1, the CPU to itself (the data job paused); jemalloc with its default decay.
set -uo pipefail
while pgrep -f "gamma-floor-2026-11-25.sh|cb-2026-11-25.sh" > /dev/null; do sleep 30; done
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serve load $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench server --concurrency 1 32 --rounds 3 --streams 20 \
  --out benchmarks/results/serve_load_2026-11-25.json --markdown benchmarks/SERVE_LOAD_2026-11-25.md
echo "== done $(date -Is) (exit $?)"
