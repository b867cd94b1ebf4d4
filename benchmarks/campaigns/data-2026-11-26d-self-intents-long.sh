#!/bin/bash
# Session 2026-11-26 (twenty-fourth), issue 20: self-intents batches with requests of up to 128 tokens (64 before:
# two thirds of the edit, summary and code requests ran past it and were dropped, and they are the long-input
# requests the drafters guess worst). Otherwise the settings of data-2026-11-24d-self-intents.sh; a background
# job paused with SIGSTOP while benchmarks or the suite need the CPU; cached and resumable (rerun to continue).
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
mkdir -p /work/runs && cd /work/runs
echo "== self-intents (requests <= 128 tokens) seed ${SEED:?set SEED} $(date -Is) $(lscpu | grep 'Model name')"
timeout ${SELF_SECONDS:-10000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts self-intents --count 8064 --seed "$SEED" --request-tokens 128
rc=$?; echo "== done $(date -Is) (exit $rc)"
