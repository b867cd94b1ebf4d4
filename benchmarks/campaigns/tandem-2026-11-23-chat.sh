#!/bin/bash
# Session 2026-11-23 (ninth): the identity Tandem secondary continued from its shipped weights on the same primary
# cache the draft was continued on in the eighth session (primary-chat: 3,776 ShareGPT first turns, 423,025 answer
# tokens, answers sha256 493053f3c06a...), at equal tokens seen: 1,200 steps x 8 sequences = 9,600 sequences, as
# the draft's 400 x 24. Then both scored on the cache's held-out tail with eval-tandem (the eighth session's draft
# result is re-scored in the same run, so the two rows share the run).
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== tandem-chat $(date -Is) $(lscpu | grep 'Model name')"
timeout ${TRAIN_SECONDS:-2700} specdec train tandem --architecture tandem --preset distil --cache primary-chat \
  --init-from smollm2-135m-tandem --steps 1200 --batch-size 8 --warmup 50 --eval-every 150 --save-every 150 \
  --eval-sequences 64 --bf16 auto --output tandem-chat --resume
rc=$?; echo "== done $(date -Is) (exit $rc)"
