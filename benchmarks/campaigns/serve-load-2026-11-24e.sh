#!/bin/bash
# Session 2026-11-24 (sixteenth), issue 22: the load test at c = 1 and 32 after the scheduler keeps what the
# γ policy learned from loop to loop (each request arriving alone used to start from a plain step), with the
# default drafter, three rounds; a 20-stream burst. Beside serve-load-2026-11-24d.sh (before the change).
# From the worktree at the commit given as $1, the CPU to itself; jemalloc with its default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serve load $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench server --concurrency 1 32 --rounds 3 --streams 20 \
  --out benchmarks/results/serve_load_2026-11-24e.json --markdown benchmarks/SERVE_LOAD_2026-11-24e.md
echo "== done $(date -Is) (exit $?)"
