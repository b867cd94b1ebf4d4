#!/bin/bash
# Session 2026-11-23: the primary cache over all six answer files (0.85 M + 0.61 M answer tokens) for the next
# draft / Tandem campaign: top-64 logits, hidden states of layers 0 and 29 (the identity Tandem's map). Resumable:
# rerun to finish (shards of 256 sequences).
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
echo "== primary-v2 $(date -Is)"
specdec data primary --dtype bf16 \
  --answers $A/answers-509d3cd7130055d4.jsonl --answers $A/answers-e8035982f33a7b34.jsonl \
  --answers $A/answers-28fda3a2d342a3fb.jsonl --answers $A/answers-4095ff225c3f9738.jsonl \
  --answers $A/answers-f758a6038260eff8.jsonl --answers $A/answers-e9f4ec4209bf0bd2.jsonl \
  --output primary-v2 --max-len 256 --batch-size 16 --hidden-layers 0,29
echo "== done $(date -Is)"
