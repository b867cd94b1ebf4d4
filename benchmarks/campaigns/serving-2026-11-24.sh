#!/bin/bash
# Session 2026-11-24 (tenth), issue 21: continuous batching with the second load-aware gamma (commit 4a78ae2) beside
# vLLM's fixed cut-off (gamma 4, off from 4 rows) and plain decoding run twice (first and last: the run's noise),
# then batch generate of the engine before issue 21 (e96bddf) against this one, A/B in one run. Both from detached
# worktrees (/work/bench-tree at 4a78ae2, /work/old-tree at e96bddf).
# As run: the serving step was stopped after c = 16 (a 7 s unit-test run overlapped one c = 16 row, and the
# policy changed again: its first step became a plain one), its partial results not committed; the A/B step ran
# afterwards on its own, with the CPU to itself. serving-2026-11-24b.sh is the serving run of the final policy.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
echo "== serving $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && PYTHONPATH=/work/bench-tree/src specdec bench-serving --cutoff 4:4 \
  --out $M/benchmarks/results/continuous_batching_2026-11-24.json --markdown $M/benchmarks/CONTINUOUS_BATCHING_2026-11-24.md)
echo "== generate A/B $(date -Is) (exit $?)"
(cd /work/bench-tree && PYTHONPATH=/work/bench-tree/src python benchmarks/generate_ab.py --tree before=/work/old-tree \
  --tree after=/work/bench-tree --out $M/benchmarks/results/generate_ab_2026-11-24.json --markdown $M/benchmarks/GENERATE_AB_2026-11-24.md)
echo "== done $(date -Is) (exit $?)"
