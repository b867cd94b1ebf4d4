#!/bin/bash
# Session 2026-11-26 (twenty-second), issue 20: the shipped EAGLE-3 head (smollm2-135m-eagle3, 9708f26bcc728994: one
# pass over primary-intents2 + primary-sharegpt2 on top of the earlier head) continued with the sixth and seventh
# self-intents batches added (primary-intents3, primary-2026-11-26b.sh: ~0.94 M answer tokens new to it), all three
# caches read as one. A fresh schedule: 1,500 steps at batch 16, training-time test 4 deep, lr 5e-4, warmup 50;
# held-out: each cache's 5 % tail, the selection set its first 64 sequences (every cache); step 0 scores the
# shipped head on the same set. Resumable (--resume): rerun to continue.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f primary-2026-11-26b.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== eagle3-chat3 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${EAGLE_SECONDS:-5400} specdec train eagle3 --cache primary-intents2 --cache primary-sharegpt2 \
  --cache primary-intents3 --init-from /work/main/src/specdec/models/drafts/smollm2-135m-eagle3 \
  --steps ${STEPS:-1500} --batch-size 16 --ttt-steps 4 --lr 5e-4 --warmup 50 --eval-every 150 --save-every 150 \
  --eval-sequences 64 --bf16 auto --output eagle3-chat3 --resume
rc=$?; echo "== done $(date -Is) (exit $rc)"
