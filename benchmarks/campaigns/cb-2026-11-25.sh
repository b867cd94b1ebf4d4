#!/bin/bash
# Session 2026-11-25 (eighteenth), issue 21: continuous_batching.json again (c = 1, 4, 16, 64, requests arriving
# over time, plain vs speculative with the adaptive γ and vLLM's fixed cut-off γ 4 off from 4 rows), after the
# engine's graph buckets (7110d04) and the γ cost curve (1c7741e); the last run was at 2026-11-24 01:35.
# Its first start stopped at once (continuous_batching.json exists and a run never overwrites another's): a dated
# file, run last. Waits for the session's other campaign scripts; from the worktree at the commit given as $1, the CPU to itself
# (the data job paused); jemalloc with its default decay.
set -uo pipefail
while pgrep -f "gamma-floor-2026-11-25.sh|serve-load-2026-11-25.sh|rounds-2026-11-25c.sh" > /dev/null; do sleep 30; done
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serving $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 4 16 64 --cutoff 4:4 \
  --out benchmarks/results/continuous_batching_2026-11-25.json --markdown benchmarks/CONTINUOUS_BATCHING_2026-11-25.md
echo "== done $(date -Is) (exit $?)"
