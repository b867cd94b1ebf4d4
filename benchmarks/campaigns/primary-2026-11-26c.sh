#!/bin/bash
# Session 2026-11-26 (twenty-third), issue 20: a primary cache over the eighth and ninth committed self-intents
# batches (seeds 800000 and 900000: 10,301 requests, 990,130 answer tokens), which no drafter has trained on.
# The settings of primary-2026-11-26.sh (top-64, hidden states 0, 29 for Tandem and 2, 15, 27 for EAGLE-3, max
# 256 tokens, bf16); its own 5 % held-out tail. Resumable: rerun to finish (shards of 256 sequences).
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
echo "== primary-intents4 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
specdec data primary --dtype bf16 --answers $A/answers-63d80de7dda2bcbd.jsonl \
  --answers $A/answers-5387e7e10c5f2f64.jsonl \
  --output primary-intents4 --max-len 256 --batch-size 16 --hidden-layers 0,2,15,27,29
rc=$?; echo "== done $(date -Is) (exit $rc)"
