#!/bin/bash
# Session 2026-11-26 (twentieth), issue 20: the shipped EAGLE-3 head (smollm2-135m-eagle3, a29b0732ad36442d: 2.42 M
# answer positions seen of 1.17 M distinct tokens, since lost) continued on answers mostly new to it: the three
# committed self-intents batches (primary-intents2) and ShareGPT's first turns of every length (primary-sharegpt2),
# read as one (primary-2026-11-26.sh). A fresh schedule: 1 pass at batch 16 (STEPS), training-time test 4 deep,
# lr 5e-4, warmup 50; held-out: each cache's 5 % tail, the selection set its first 64 sequences (both sources);
# step 0 scores the shipped head on the same set. Resumable (--resume): rerun to continue.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f primary-2026-11-26.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== eagle3-chat2 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${EAGLE_SECONDS:-5400} specdec train eagle3 --cache primary-intents2 --cache primary-sharegpt2 \
  --init-from /work/main/src/specdec/models/drafts/smollm2-135m-eagle3 --steps ${STEPS:-1500} --batch-size 16 \
  --ttt-steps 4 --lr 5e-4 --warmup 50 --eval-every 150 --save-every 150 --eval-sequences 64 --bf16 auto \
  --output eagle3-chat2 --resume
rc=$?; echo "== done $(date -Is) (exit $rc)"
