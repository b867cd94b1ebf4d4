#!/bin/bash
# Session 2026-11-26 (twenty-third), issue 20: the shipped EAGLE-3 head (smollm2-135m-eagle3, 72503ffc1d1ffda7: best
# step of train-2026-11-26b-eagle3.sh) continued with two new caches added: the eighth and ninth self-intents
# batches (primary-intents4, primary-2026-11-26c.sh: ~0.94 M answer tokens) and the first RAG- and summary-length
# requests over passages (primary-passages1, data-2026-11-26c-passages.sh), all five caches read as one.
# Steps are cut into micro-batches of at most 4,096 padded tokens (a passage pads to ~800 tokens, a chat to
# ~256). A lower peak lr than last time (2e-4, not 5e-4: the restarted warm-up to 5e-4 first cost 6 % per chain);
# 1,200 steps at batch 16, training-time test 4 deep, warmup 50; held-out: each cache's 5 % tail, the selection
# set its first 80 sequences (16 of every cache); step 0 scores the shipped head on the same set. Resumable.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f "primary-2026-11-26c.sh|data-2026-11-26c-passages.sh" > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== eagle3-chat4 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${EAGLE_SECONDS:-5400} specdec train eagle3 --cache primary-intents2 --cache primary-sharegpt2 \
  --cache primary-intents3 --cache primary-intents4 --cache primary-passages1 \
  --init-from /work/runs/eagle3-7250 \
  --steps ${STEPS:-1200} --batch-size 16 --max-batch-tokens 4096 --ttt-steps 4 --lr 2e-4 --warmup 50 \
  --eval-every 150 --save-every 150 --eval-sequences 80 --bf16 auto --output eagle3-chat4 --resume
rc=$?; echo "== done $(date -Is) (exit $rc)"
