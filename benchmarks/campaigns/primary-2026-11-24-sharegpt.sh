#!/bin/bash
# Session 2026-11-24 (thirteenth), issue 20: the ShareGPT first-turn answers (d09e7ea2029c7af7: 3,776 answers,
# ~0.42 M tokens, written by the target in the eleventh session) as a primary cache with EAGLE-3's auxiliary layers
# (2, 15, 27) beside Tandem's (0, 29): the earlier primary-chat cache over the same answers held only 0 and 29.
# With primary-intents it gives the EAGLE-3 head a second source of real user requests. Resumable: rerun to finish.
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
echo "== primary-sharegpt $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
specdec data primary --dtype bf16 --answers $A/answers-d09e7ea2029c7af7.jsonl \
  --output primary-sharegpt --max-len 256 --batch-size 16 --hidden-layers 0,2,15,27,29
echo "== done $(date -Is)"
