#!/bin/bash
# Session 2026-11-26 (twentieth), issue 21: continuous batching at c = 1, 4, 16, 64 (requests arriving over time,
# plain vs speculative with the adaptive γ and vLLM's fixed cut-off γ 4 off from 4 rows) after the in-place row
# moves (2720060) and the freed cache (38f9452), which made plain decoding at c = 64 2.2x faster
# (C64_AB_2026-11-26.md). From the worktree at the commit given as $1, the CPU to itself: the data job is stopped
# (killed: it resumes from its cache; paused, its ~10 GB would leave too little memory for c = 64), jemalloc with
# its default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -f "data answers"
git -C /work/bench-tree checkout -q --detach "$1" || exit 1
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serving $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 4 16 64 --cutoff 4:4 \
  --out /work/main/benchmarks/results/continuous_batching_2026-11-26.json \
  --markdown /work/main/benchmarks/CONTINUOUS_BATCHING_2026-11-26.md
echo "== done $(date -Is) (exit $?)"
