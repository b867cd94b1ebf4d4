#!/bin/bash
# Session 2026-11-28 (thirty-fourth), issue 20: the tree default under load once the adaptive policy chooses per
# step between the top-2 tree and its chain alone (270d35b). serve-tree-ab-2026-11-27h.sh measured speculation on
# against off at 16 clients 0.94x with the tree (always verified whole) and 1.09x with the chain; this reruns its
# tree half: `specdec bench server` with `lookup+int8:tree-2:eagle3:`, 1 and 16 clients, 2 rounds, a burst of 20
# streams. Run with the machine to itself, from a worktree at the commit to measure (BENCH_TREE); results to
# /work/main (each run its own files); PAUSE_PID: a background job stopped while it runs.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1 PYTHONPATH=${BENCH_TREE:-/work/bench-tree}/src
M=/work/main
if [ -n "${PAUSE_PID:-}" ]; then kill -STOP "$PAUSE_PID"; trap 'kill -CONT "$PAUSE_PID"' EXIT; fi
cd "${BENCH_TREE:-/work/bench-tree}"
echo "== $(date -Is) $(lscpu | grep 'Model name') commit $(git rev-parse --short HEAD)"
specdec bench server --drafter lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 --concurrency 1 16 --rounds 2 \
  --streams 20 --out $M/benchmarks/results/serve_width_ab_2026-11-28.json \
  --markdown $M/benchmarks/SERVE_WIDTH_AB_2026-11-28.md
echo "== done $(date -Is) (exit $?)"
