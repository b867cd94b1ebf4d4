#!/bin/bash
# Session 2026-11-24 (thirteenth), issues 20 / 23, after train-2026-11-24-eagle3.sh: the EAGLE-3 heads against the
# shipped draft (30 Spec-Bench prompts x 128 tokens, greedy, one run with the CPU to itself), from a worktree of the
# commit given as $1: the twelfth session's head (eagle3-intents) with this session's packed and int8 head, and
# the head continued on both chat caches (eagle3-chat), as a chain and as a tree, fp32 and int8.
set -uo pipefail
source /work/main/.venv/bin/activate
while pgrep -f train-2026-11-24-eagle3.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
R=/work/runs
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
OLD=eagle3:$R/eagle3-intents/best NEW=eagle3:$R/eagle3-chat/best
drafters=int8:vocab-2048:smollm2-135m-draft,tree-2:$OLD,int8:$OLD,int8:$NEW,int8:tree-2:$NEW,tree-2:$NEW
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench --per-task 5 --max-new-tokens 128 --heuristic-for "" --drafters "$drafters" \
  --out benchmarks/results/specbench_eagle3_2026-11-24.json --markdown benchmarks/EAGLE3_BENCH_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
