#!/bin/bash
# Session 2026-11-24 (twelfth), issue 20: the primary cache over the two finished self-intents answer files
# (9dd1f09bf4da6bf8: 2,584 answers, 247,360 tokens; c33433daef7f419f: 5,195 answers, 498,790 tokens), answers no
# drafter has trained on, so its held-out tail is clean. Top-64 logits; hidden states 0 and 29 (the identity Tandem's
# map) and 2, 15, 27 (EAGLE-3's auxiliary layers for a 30-layer target, issue 23), so every drafter trains on one
# cache. Repeated prompts across the two runs are kept once. Resumable: rerun to finish (shards of 256 sequences).
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
echo "== primary-intents $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
specdec data primary --dtype bf16 \
  --answers $A/answers-9dd1f09bf4da6bf8.jsonl --answers $A/answers-c33433daef7f419f.jsonl \
  --output primary-intents --max-len 256 --batch-size 16 --hidden-layers 0,2,15,27,29
echo "== done $(date -Is)"
