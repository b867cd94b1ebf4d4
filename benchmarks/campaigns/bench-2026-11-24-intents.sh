#!/bin/bash
# Session 2026-11-24 (twelfth), issue 20 / 23, after train-2026-11-24-intents.sh: the bench of every drafter that run
# trained against the shipped ones (30 Spec-Bench prompts x 128 tokens, greedy, one run with the CPU to itself),
# from a worktree of the commit given as $1 (the code the drafters were trained with).
set -uo pipefail
source /work/main/.venv/bin/activate
while pgrep -f train-2026-11-24-intents.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
R=/work/runs
cp /work/main/src/specdec/models/drafts/smollm2-135m-draft/draft_vocab.json $R/draft-intents/best/
cp /work/main/src/specdec/models/drafts/smollm2-135m-tandem/draft_vocab.json $R/tandem-intents/best/
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
D=int8:vocab-2048
drafters=$D:smollm2-135m-draft,$D:$R/draft-intents/best,$D:tandem:smollm2-135m-tandem,$D:tandem:$R/tandem-intents/best
drafters+=,eagle3:$R/eagle3-intents/best,tree-2:eagle3:$R/eagle3-intents/best
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench --per-task 5 --max-new-tokens 128 --heuristic-for "" --drafters "$drafters" \
  --out benchmarks/results/specbench_intents_2026-11-24.json --markdown benchmarks/INTENTS_BENCH_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
