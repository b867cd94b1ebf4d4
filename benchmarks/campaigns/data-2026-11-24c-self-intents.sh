#!/bin/bash
# Session 2026-11-24 (eleventh, last minutes), issue 20: a third batch of intent-steered self-written chat requests and the target's answers
# toward the issue's 20,000 requests / 10 M answer tokens, as a background job while other issues' work goes on
# (paused with SIGSTOP whenever a benchmark or the test suite needs the CPU). A new seed, so the requests are new
# draws; cached and resumable: rerun the same command to continue.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
cd /work/runs
echo "== self-intents $(date -Is) $(lscpu | grep 'Model name')"
timeout ${SELF_SECONDS:-10000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts self-intents --count 8064 --seed 300000
echo "== done $(date -Is) (exit $?)"
