#!/bin/bash
# Session 2026-11-24 (fourteenth), issue 20: the combined drafters again after the γ policy per drafting source
# (9f451d1), against prompt lookup alone (the same 30 Spec-Bench prompts x 128 tokens, greedy, our plain as the
# baseline; no HF rows, which the previous run has), one run with the CPU to itself (the background data job paused
# by the caller), from the worktree at the commit given as $1.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
drafters=prompt-lookup,lookup+int8:vocab-2048:smollm2-135m-draft,lookup+bf16:eagle3:smollm2-135m-eagle3
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf --drafters "$drafters" \
  --out $M/benchmarks/results/specbench_per_source_2026-11-24.json --markdown $M/benchmarks/PER_SOURCE_BENCH_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
