#!/bin/bash
# Session 2026-11-28 (thirty-fourth), issue 20, CAMPAIGN.md next run 2 on the CPU: the shipped EAGLE-3 head
# (ac6140726a9cc5be) continued at a lower learning rate (3e-5, against the 1e-4 of the two earlier CPU continuations,
# which each bought translation and lost 2.5-3 % on general chat) on the mixed back-translation cache of the
# thirty-third session (/work/runs/primary-bt-i: 2,541 German -> English answers + 6,400 of self-intents-2600000) plus
# a general replay drawn from every committed self-intents batch (answers 1,001-1,100 of each of the 26 batches in
# benchmarks/data, 2,600 answers), so that what it replays is the whole of what the head learnt, not one batch.
# One primary cache over the replay (layers 0,2,15,27,29 as the others), then `train eagle3 --init-from` the shipped
# head over both caches. Resumable: rerun continues the cache and the run (--resume). TRAIN_SECONDS bounds training.
#   benchmarks/campaigns/train-2026-11-28-eagle3-replay.sh
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1
M=/work/main R=/work/runs
BT=${BT:-$R/primary-bt-i} CACHE=${CACHE:-$R/primary-replay-k} RUN=${RUN:-$R/eagle3-replay-k}
REPLAY=$R/general-replay-all-2600.jsonl
cd $R
if [ ! -f "$REPLAY" ]; then
  for d in $M/benchmarks/data/self-intents-*; do gunzip -c "$d"/answers-*.jsonl.gz | sed -n 1001,1100p; done \
    > "$REPLAY.tmp" && mv "$REPLAY.tmp" "$REPLAY"
fi
echo "== cache $(date -Is) $(lscpu | grep 'Model name') commit $(git -C $M rev-parse --short HEAD)"
sha256sum "$REPLAY"; wc -l "$REPLAY"
specdec data primary --answers "$REPLAY" --output "$CACHE" --max-len 256 \
  --batch-size 16 --dtype bf16 --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== train $(date -Is) (exit ${PIPESTATUS[0]})"
timeout "${TRAIN_SECONDS:-2400}" specdec train eagle3 --cache "$BT" --cache "$CACHE" \
  --init-from $M/src/specdec/models/drafts/smollm2-135m-eagle3 --steps "${STEPS:-400}" --batch-size 16 \
  --max-batch-tokens 4096 --ttt-steps 4 --lr "${LR:-3e-5}" --warmup 30 --eval-every 100 --save-every 100 \
  --eval-sequences 80 --bf16 auto --output "$RUN" --resume 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is) (exit ${PIPESTATUS[0]})"
