#!/bin/bash
# Session 2026-11-23 (ninth), after tandem-2026-11-23-chat.sh: the Tandem secondary continued on chat against the
# draft continued on the same cache at equal tokens (the shipped smollm2-135m-draft is that run's best) and the
# shipped Tandem, on the cache's held-out tail (eval-tandem), then the bench of the three (30 Spec-Bench prompts x
# 128 tokens, greedy, int8 + the 2,048-token head for all three), then intent-steered self-written requests
# (sampled: cheap since the keyed noise is computed only at the nucleus) under a wall-clock budget.
# Runs from a detached worktree of the commit under test (/work/bench-tree), so code edited meanwhile in /work/main
# cannot leak into a measurement; results are written into /work/main.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src
M=/work/main
cd /work/runs
while pgrep -f tandem-2026-11-23-chat.sh > /dev/null; do sleep 5; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
NEW=/work/runs/tandem-chat/best
cp $M/src/specdec/models/drafts/smollm2-135m-tandem/draft_vocab.json $NEW/
echo "== eval $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && specdec eval-tandem --model draft-chat=$HOME/.cache/specdec/smollm2-135m-draft \
  --model tandem-shipped=$HOME/.cache/specdec/smollm2-135m-tandem --model tandem-chat=$NEW \
  --cache chat=/work/runs/primary-chat --run draft-chat=/work/runs/draft-chat --run tandem-chat=/work/runs/tandem-chat \
  --out $M/benchmarks/results/tandem_chat_eval_2026-11-23.json --markdown $M/benchmarks/TANDEM_CHAT_EVAL.md \
  --plot $M/benchmarks/results/tandem_chat_budget_2026-11-23.png)
rc=$?; echo "== bench $(date -Is) (exit $rc)"
(cd /work/bench-tree && specdec bench --per-task 5 --max-new-tokens 128 \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem:$NEW \
  --out $M/benchmarks/results/specbench_tandem_chat_2026-11-23.json --markdown $M/benchmarks/TANDEM_CHAT_BENCH_2026-11-23.md)
rc=$?; echo "== self-intents $(date -Is) (exit $rc)"
timeout ${SELF_SECONDS:-3000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts self-intents --count 4032 --seed 100000
rc=$?; echo "== done $(date -Is) (exit $rc)"
