#!/bin/bash
# Session 2026-11-24 (sixteenth), issue 20: a fourth batch of intent-steered self-written chat requests and the
# target's answers (the third's settings, a new seed: new draws), as a background job paused with SIGSTOP while
# benchmarks or the suite need the CPU. Cached and resumable: rerun the same command to continue; restore the
# committed files first (benchmarks/data/README.md). SEED overrides the seed for later batches.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
mkdir -p /work/runs && cd /work/runs
echo "== self-intents seed ${SEED:-400000} $(date -Is) $(lscpu | grep 'Model name')"
timeout ${SELF_SECONDS:-10000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts self-intents --count 8064 --seed ${SEED:-400000}
rc=$?; echo "== done $(date -Is) (exit $rc)"
