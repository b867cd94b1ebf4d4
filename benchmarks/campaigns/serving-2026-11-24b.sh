#!/bin/bash
# Session 2026-11-24 (tenth), issue 21 item 6: continuous batching with the final load-aware gamma (one call-cost
# curve over tokens, plain first step, doubling exploration, backed-off probes) beside vLLM's fixed cut-off (gamma 4,
# off from 4 rows), plain decoding first and last (the run's noise), at c = 1, 4, 16, 64. From a detached worktree
# of the commit under test (/work/bench-tree, COMMIT below); nothing else ran on the CPU.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
echo "== serving $(date -Is) $(git -C /work/bench-tree rev-parse --short HEAD) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && PYTHONPATH=/work/bench-tree/src specdec bench-serving --cutoff 4:4 \
  --out $M/benchmarks/results/continuous_batching_2026-11-24.json --markdown $M/benchmarks/CONTINUOUS_BATCHING_2026-11-24.md)
echo "== done $(date -Is) (exit $?)"
