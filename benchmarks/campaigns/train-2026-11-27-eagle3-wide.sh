#!/bin/bash
# Session 2026-11-27 (twenty-fifth), issue 20: the widened EAGLE-3 head (train-2026-11-26d-eagle3-wide.sh's best,
# MLP 3,072 units, in /work/runs/eagle3-wide1) continued on its five caches and primary-gpu1 (two of the batches
# the H200 wrote: 1.24 M answer tokens it has not seen), with that run's settings but a lower peak (1.5e-4: a
# restarted warm-up to the old peak first cost per-chain acceptance in an earlier continuation). STEPS is what
# fits the session (~2.6 s/step with evaluations). The selection set (80 held-out sequences over all six caches'
# tails) now includes the new cache: step 0 scores the starting head on it. Resumable.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== eagle3-wide2 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${EAGLE_SECONDS:-3600} specdec train eagle3 --cache primary-intents2 --cache primary-sharegpt2 \
  --cache primary-intents3 --cache primary-intents4 --cache primary-passages1 --cache primary-gpu1 \
  --init-from /work/runs/eagle3-wide1/best \
  --steps ${STEPS:-1000} --batch-size 16 --max-batch-tokens 4096 --ttt-steps 4 --lr 1.5e-4 --warmup 50 \
  --eval-every 125 --save-every 125 --eval-sequences 80 --bf16 auto --output eagle3-wide2 --resume
rc=$?; echo "== done $(date -Is) (exit $rc)"
