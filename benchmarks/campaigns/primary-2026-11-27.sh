#!/bin/bash
# Session 2026-11-27 (twenty-fifth), issue 20: a primary cache over two of the self-intents batches the lent H200
# wrote and answered (data-gpu-2026-11-27.sh; seeds 1400000 and 1600000: 12,779 requests, 1,244,275 answer
# tokens), which no drafter has trained on. The settings of primary-2026-11-26c.sh (top-64, hidden states 0, 29
# for Tandem and 2, 15, 27 for EAGLE-3, max 256 tokens, bf16); its own 5 % held-out tail. Two batches, not
# fifteen: a cache holds ~9 GB per million answer tokens and this machine has ~21 GB free. Resumable.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
echo "== primary-gpu1 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
specdec data primary --dtype bf16 --answers $A/answers-ee5932069a7cc51a.jsonl \
  --answers $A/answers-74e586a4d8a9d3f0.jsonl \
  --output primary-gpu1 --max-len 256 --batch-size 16 --hidden-layers 0,2,15,27,29
rc=$?; echo "== done $(date -Is) (exit $rc)"
