#!/bin/bash
# Session 2026-11-27 (thirty-third), issue 20: does the fast engine (compile=True: one-token steps and verify blocks
# compiled on CPU, since 3344f35) pay on this machine, where the compile probe gave 0.91 / 0.86 of the eager step
# (COMPILE_PROBE_2026-11-27j.md)? HF generate, our plain and the head's tree (alone and behind prompt lookup, the
# default) on both engines, one run, 30 Spec-Bench prompts x 128 tokens, greedy. Run from a worktree at the commit
# to measure (BENCH_TREE); PAUSE_PID: a background job stopped while it runs (continued on exit).
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1 PYTHONPATH=${BENCH_TREE:-/work/bench-tree}/src
M=/work/main TAG=${TAG:-2026-11-27j}
if [ -n "${PAUSE_PID:-}" ]; then kill -STOP "$PAUSE_PID"; trap 'kill -CONT "$PAUSE_PID"' EXIT; fi
cd "${BENCH_TREE:-/work/bench-tree}"
echo "== $(date -Is) $(lscpu | grep 'Model name') commit $(git rev-parse --short HEAD)"
HEAD=int8:tree-2:eagle3:smollm2-135m-eagle3
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for '' --engine eager,fast \
  --drafters "$HEAD,lookup+$HEAD" \
  --out $M/benchmarks/results/fast_engine_ab_$TAG.json --markdown $M/benchmarks/FAST_ENGINE_AB_$TAG.md \
  2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is) (exit ${PIPESTATUS[0]})"
