#!/bin/bash
# Session 2026-11-26 (twentieth), issue 21: the c = 1 part of cb-2026-11-26.sh again, three rotated rounds: in that
# run a 20-second `bench serving` started by hand shared the CPU with its first configuration (plain at c = 1: 16.0
# tok/s against 51.7 for its repeat), so its c = 1 ratios are void. Same commit, the CPU to itself.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1" || exit 1
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serving c = 1 $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 --cutoff 4:4 --rounds 3 \
  --out /work/main/benchmarks/results/continuous_batching_2026-11-26_c1.json \
  --markdown /work/main/benchmarks/CONTINUOUS_BATCHING_2026-11-26_C1.md
rc=$?; echo "== done $(date -Is) (exit $rc)"
