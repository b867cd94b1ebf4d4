#!/bin/bash
# Session 2026-11-23 (eighth): chat data in the target's own words for issue 20 (resumable: rerun to continue).
# ShareGPT first turns, then intent-steered self-written requests, then ShareGPT's follow-up turns (the target
# answers each turn after its own earlier answers). 128 new tokens: the bench's length, and more distinct prompts
# per CPU hour. Caches under ~/.cache/specdec/answers; each step prints its files and writes a manifest.
set -euo pipefail
source /work/main/.venv/bin/activate
S=/work/shared/data/train
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
common="--dtype bf16 --batch-size 64 --max-new-tokens 128 --max-prompt-tokens 768"
echo "== sharegpt round 1 $(date -Is) $(lscpu | grep 'Model name')"
specdec data answers $common --prompts conversations:$S/sharegpt/prompts.jsonl.gz --count 9453 --rounds 1
echo "== self-intents $(date -Is)"
specdec data answers $common --prompts self-intents --count 20000 --seed 100000
echo "== sharegpt rounds 2-3 $(date -Is)"
specdec data answers $common --prompts conversations:$S/sharegpt/prompts.jsonl.gz --count 9453
echo "== done $(date -Is)"
