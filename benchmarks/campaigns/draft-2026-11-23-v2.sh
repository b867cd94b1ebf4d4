#!/bin/bash
# Session 2026-11-23, for the next session to resume (`--resume`): the shipped draft's run (draft-distil-long,
# step 1820) continued on primary-v2 (all six answer files, 1.46 M answer tokens incl. 0.49 M answers to
# self-written requests), same losses (λ = 0.5 KD + CE: steps 1820..3640 are the distil preset's second half).
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f campaign13.sh > /dev/null; do sleep 5; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== draft-v2 $(date -Is) $(lscpu | grep 'Model name')"
specdec train tandem --cache primary-v2 --layers 2 --steps 3640 --batch-size 24 --eval-every 70 --save-every 70 \
  --eval-sequences 64 --bf16 auto --output draft-v2 --preset distil --architecture draft \
  --branch-from draft-distil-long/checkpoint-1820 --resume
echo "== done $(date -Is)"
