#!/bin/bash
# Session 2026-11-24 (fourteenth), issue 22: the load test again, now in rounds (plain, speculative, plain again,
# order rotated; 3 rounds per concurrency): one loop of each at c = 16 / 32 cannot tell 0.87x from noise (plain
# against itself varies by 10-20 % on this machine). From the worktree at the commit given as $1, the CPU to
# itself (the background data job paused with SIGSTOP by the caller).
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serve load $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench server --drafter prompt-lookup --concurrency 1 8 16 32 --rounds 3 \
  --out $M/benchmarks/results/serve_load_2026-11-24b.json --markdown $M/benchmarks/SERVE_LOAD_2026-11-24b.md
echo "== done $(date -Is) (exit $?)"
