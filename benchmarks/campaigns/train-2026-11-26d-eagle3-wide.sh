#!/bin/bash
# Session 2026-11-26 (twenty-fourth), issue 20: is the EAGLE-3 head's capacity what holds chat back? The shipped head
# (smollm2-135m-eagle3, 7693cf07ee031ed6) agrees with the target about as often on its training answers as on
# held-out ones, and its last continuation (train-2026-11-26c-eagle3.sh) left chat held-out flat. Here it is widened
# (MLP 1,536 -> 3,072 units, function-preserving: step 0 scores exactly the shipped head) and continued with that
# run's settings on the same five caches (lr 2e-4, warmup 50, batch 16, micro-batches <= 4,096 tokens, training-time
# test 4 deep, the same 80-sequence selection set), 1,000 steps. Compare per source with
# benchmarks/campaigns/heldout_eagle3.py against the shipped head. Resumable.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== eagle3-wide $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${EAGLE_SECONDS:-5400} specdec train eagle3 --cache primary-intents2 --cache primary-sharegpt2 \
  --cache primary-intents3 --cache primary-intents4 --cache primary-passages1 \
  --init-from /work/main/src/specdec/models/drafts/smollm2-135m-eagle3 --intermediate-size 3072 \
  --steps ${STEPS:-1000} --batch-size 16 --max-batch-tokens 4096 --ttt-steps 4 --lr 2e-4 --warmup 50 \
  --eval-every 125 --save-every 125 --eval-sequences 80 --bf16 auto --output eagle3-wide1 --resume
rc=$?; echo "== done $(date -Is) (exit $rc)"
