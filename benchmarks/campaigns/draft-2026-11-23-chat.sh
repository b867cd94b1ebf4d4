#!/bin/bash
# Session 2026-11-23 (eighth), after data-2026-11-23-chat.sh: the primary cache over this session's chat answers
# (ShareGPT first turns, intent-steered self-written requests), then the shipped draft continued on it from its
# shipped weights (`--init-from`: its run folders did not survive), under a wall-clock budget, then both drafts
# scored on the cache's held-out tail (answers of both sources no run trained or selected on), then the bench
# (30 Spec-Bench prompts x 128 tokens, greedy) of every drafter this session touched.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f data-2026-11-23-chat.sh > /dev/null; do sleep 5; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
files=$(ls $A/answers-*.jsonl | sed 's/^/--answers /')
echo "== primary-chat $(date -Is) $(lscpu | grep 'Model name') $files"
specdec data primary --dtype bf16 $files --output primary-chat --max-len 256 --batch-size 16 --hidden-layers 0,29
rc=$?; echo "== draft-chat $(date -Is) (exit $rc)"
timeout ${TRAIN_SECONDS:-1200} specdec train tandem --architecture draft --preset distil --cache primary-chat \
  --init-from smollm2-135m-draft --steps 400 --batch-size 24 --warmup 20 --eval-every 50 --save-every 50 \
  --eval-sequences 64 --bf16 auto --output draft-chat
rc=$?; echo "== eval $(date -Is) (exit $rc)"
(cd /work/main && specdec eval-tandem --model shipped=$HOME/.cache/specdec/smollm2-135m-draft \
  --model chat=/work/runs/draft-chat/best --cache chat=/work/runs/primary-chat --run chat=/work/runs/draft-chat \
  --out benchmarks/results/draft_chat_eval_2026-11-23.json --markdown benchmarks/DRAFT_CHAT_EVAL.md \
  --plot benchmarks/results/draft_chat_budget_2026-11-23.png)
rc=$?; echo "== bench $(date -Is) (exit $rc)"
cp /work/main/src/specdec/models/drafts/smollm2-135m-draft/draft_vocab.json /work/runs/draft-chat/best/
NEW=/work/runs/draft-chat/best
(cd /work/main && specdec bench --per-task 5 --max-new-tokens 128 \
  --drafters prompt-lookup,int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:$NEW,lookup+int8:vocab-2048:smollm2-135m-draft,lookup+int8:vocab-2048:$NEW,int8:vocab-2048:tandem:smollm2-135m-tandem,bita:smollm2-135m-bita \
  --out benchmarks/results/specbench_campaign_2026-11-23.json --markdown benchmarks/CAMPAIGN_BENCH_2026-11-23.md)
rc=$?; echo "== done $(date -Is) (exit $rc)"
