#!/bin/bash
# Session 2026-11-24 (fourteenth), issue 22: the load test at c = 16 and 32 only, after the γ policy's probe margin
# (da41378), 3 rounds each, to set against SERVE_LOAD_2026-11-24b.md (same test, before it). A 20-stream burst
# only (the 200-stream one ran in the b run; this run is about speed). From the worktree at the commit given as
# $1, the CPU to itself (the background data job paused with SIGSTOP by the caller).
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serve load $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench server --drafter prompt-lookup --concurrency 16 32 --rounds 3 --streams 20 \
  --out $M/benchmarks/results/serve_load_2026-11-24c.json --markdown $M/benchmarks/SERVE_LOAD_2026-11-24c.md
echo "== done $(date -Is) (exit $?)"
