#!/bin/bash
# Session 2026-11-24 (thirteenth), issues 20 and 23: the EAGLE-3 head of the twelfth session (eagle3-intents/best,
# 7da5f633f0c5258e: 0.55 M tokens seen, 0.375 selection agreement, still rising) continued on two caches read as
# one: the self-intents cache (7,765 sequences) and the ShareGPT first-turn cache with the aux layers (3,776;
# primary-2026-11-24-sharegpt.sh). 1,800 steps x 16 sequences (~2.6 passes), training-time test 4 deep, lr 8e-4
# (fresh schedule, warmup 50); held-out: each cache's 5 % tail, the selection set its first 64 (both sources).
# Resumable (--resume): rerun to continue.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f primary-2026-11-24-sharegpt.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== eagle3-chat $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${EAGLE_SECONDS:-5400} specdec train eagle3 --cache primary-intents --cache primary-sharegpt \
  --init-from eagle3-intents/best --steps 1800 --batch-size 16 --ttt-steps 4 --lr 8e-4 --warmup 50 \
  --eval-every 150 --save-every 150 --eval-sequences 64 --bf16 auto --output eagle3-chat --resume
echo "== done $(date -Is) (exit $?)"
