#!/bin/bash
# Session 2026-11-24 (tenth), issue 20: resume the intent-steered self-written chat requests and their answers
# (cached and resumable: 384 of 4,032 requests were written in the ninth session), in the last minutes of the
# session, with nothing else on the CPU. Resume it with the same command.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
cd /work/runs
echo "== self-intents $(date -Is) $(lscpu | grep 'Model name')"
timeout ${SELF_SECONDS:-3000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts self-intents --count 4032 --seed 100000
echo "== done $(date -Is) (exit $?)"
