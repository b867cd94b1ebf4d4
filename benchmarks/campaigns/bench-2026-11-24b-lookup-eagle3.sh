#!/bin/bash
# Session 2026-11-24 (fourteenth), issue 20: prompt lookup with the EAGLE-3 head behind it (lookup+eagle3, new this
# session) against the combined drafter with the draft (the results page's best, 1.45x) and the heads alone; the
# head whose schedule finished this session (eagle3-chat/best after 1,800 steps) beside the shipped one. 30
# Spec-Bench prompts x 128 tokens, greedy, one run with the CPU to itself (the background data job paused), from
# the worktree at the commit given as $1.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main R=/work/runs
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
E=eagle3:smollm2-135m-eagle3 NEW=eagle3:$R/eagle3-chat/best
drafters=prompt-lookup,lookup+int8:vocab-2048:smollm2-135m-draft,lookup+int8:$E,lookup+bf16:$E,int8:tree-2:$E
drafters+=,int8:tree-2:$NEW,lookup+int8:$NEW
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench --per-task 5 --max-new-tokens 128 --heuristic-for "" --drafters "$drafters" \
  --out $M/benchmarks/results/specbench_lookup_eagle3_2026-11-24.json --markdown $M/benchmarks/LOOKUP_EAGLE3_BENCH_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
