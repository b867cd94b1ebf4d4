#!/bin/bash
# Session 2026-11-23 (eighth): chat data in the target's own words for issue 20, on a 2-core CPU with a wall-clock
# budget per step (rerun to continue: every step resumes from its cache). Prompts are answered shortest first, so a
# step stopped by its budget holds the shortest prompts of its source, complete answers only.
# ShareGPT first turns, then intent-steered self-written requests. 128 new tokens: the bench's length, and more
# distinct prompts per CPU hour. Caches under ~/.cache/specdec/answers; each finished step writes a manifest.
# As run on 2026-11-23: the first step ran 20:51-21:35 (stopped by its budget, after a restart at 20:59 that set
# the budgets), the second was stopped by hand at 21:37 after 64 requests (sampling too slow: see CAMPAIGN.md).
set -uo pipefail
source /work/main/.venv/bin/activate
S=/work/shared/data/train
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
common="--dtype bf16 --batch-size 64 --max-new-tokens 128 --max-prompt-tokens 768"
echo "== sharegpt round 1 $(date -Is) $(lscpu | grep 'Model name')"
timeout ${SHAREGPT_SECONDS:-2100} specdec data answers $common --prompts conversations:$S/sharegpt/prompts.jsonl.gz \
  --count 9453 --rounds 1
rc=$?; echo "== self-intents $(date -Is) (exit $rc)"
timeout ${SELF_SECONDS:-1500} specdec data answers $common --prompts self-intents --count 4032 --seed 100000
rc=$?; echo "== done $(date -Is) (exit $rc)"
