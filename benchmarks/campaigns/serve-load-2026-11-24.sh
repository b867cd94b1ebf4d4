#!/bin/bash
# Session 2026-11-24 (thirteenth), issue 22: the server load test again, now with concurrency 16 and, at
# concurrency 1, the same requests through the library (Pipeline.generate) once the server has stopped, from a
# worktree of the commit given as $1. Prompt lookup (the default drafter). One run, the CPU to itself.
set -uo pipefail
source /work/main/.venv/bin/activate
while pgrep -f bench-2026-11-24-eagle3.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serve load $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench server --drafter prompt-lookup --concurrency 1 8 16 32 \
  --out benchmarks/results/serve_load_2026-11-24.json --markdown benchmarks/SERVE_LOAD_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
