#!/bin/bash
# Session 2026-11-26 (twentieth), issues 21 and 22, after the grouped attention (verify blocks read key/value
# heads in place): continuous batching at c = 1 (three rotated rounds) and c = 4, 16, 64 (one round), then the
# server's load test at c = 1, 16 and 32 (three rounds; c = 16 for the ">= 4x c = 1" target) with a 200-stream
# burst. From the worktree at the commit given as $1, the CPU to itself: the data job is stopped (killed; it
# resumes from its cache, restarted at the end), jemalloc with its default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -f "data answers"
git -C /work/bench-tree checkout -q --detach "$1" || exit 1
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
R=/work/main/benchmarks/results
echo "== serving c = 1 $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench serving --concurrency 1 --cutoff 4:4 --rounds 3 \
  --out $R/continuous_batching_2026-11-26b_c1.json --markdown /work/main/benchmarks/CONTINUOUS_BATCHING_2026-11-26b_C1.md
echo "== serving c = 4, 16, 64 $(date -Is) (exit $?)"
specdec bench serving --concurrency 4 16 64 --cutoff 4:4 \
  --out $R/continuous_batching_2026-11-26b.json --markdown /work/main/benchmarks/CONTINUOUS_BATCHING_2026-11-26b.md
echo "== serve load $(date -Is) (exit $?)"
specdec bench server --concurrency 1 16 32 --rounds 3 --streams 200 \
  --out $R/serve_load_2026-11-26.json --markdown /work/main/benchmarks/SERVE_LOAD_2026-11-26.md
rc=$?; echo "== done $(date -Is) (exit $rc)"
cd /work/runs && nohup /work/main/benchmarks/campaigns/data-2026-11-26-sharegpt.sh >> /work/runs/data-sharegpt.log 2>&1 &
