#!/bin/bash
# Session 2026-11-26 (twentieth), issue 20: primary caches over the answers no shipped drafter has trained on:
# the three committed self-intents batches (seeds 300000-500000: 15,530 requests, 1.49 M answer tokens) and
# ShareGPT's first turns of data-2026-11-26-sharegpt.sh (f09a0288dac199dd; as far as it got: a prefix of
# length-sorted chunks spanning every length). Top-64 logits; hidden states 0, 29 (Tandem) and 2, 15, 27
# (EAGLE-3), max 256 tokens. Two caches, so each has its own held-out tail (5 %). Note: the shipped head trained
# on the 3,776 shortest ShareGPT first turns (lost with their machine); greedy answers to the same prompts are the
# same text, so part of primary-sharegpt2's held-out tail may have been trained on: select on both caches' tails.
# Resumable: rerun to finish (shards of 256 sequences).
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
A=~/.cache/specdec/answers
echo "== primary-intents2 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
specdec data primary --dtype bf16 --answers $A/answers-a7a079616f82ea85.jsonl \
  --answers $A/answers-ce40df47f2869b08.jsonl --answers $A/answers-a2746662a209bb56.jsonl \
  --output primary-intents2 --max-len 256 --batch-size 16 --hidden-layers 0,2,15,27,29
echo "== primary-sharegpt2 $(date -Is)"
specdec data primary --dtype bf16 --answers $A/answers-f09a0288dac199dd.jsonl \
  --output primary-sharegpt2 --max-len 256 --batch-size 16 --hidden-layers 0,2,15,27,29
rc=$?; echo "== done $(date -Is) (exit $rc)"
