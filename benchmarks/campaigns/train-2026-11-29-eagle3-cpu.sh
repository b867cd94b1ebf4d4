#!/bin/bash
# Session 2026-11-29 (forty-fourth), issue 20, CAMPAIGN.md plan item 1 on a CPU without BF16 (fp32 is its fast path):
# the shipped EAGLE-3 head (ac6140726a9cc5be) continued on a committed self-intents batch its two GPU runs never read
# (self-intents-1200000: requests of up to 128 tokens, answered on the AMD EPYC; only the head before the 8,499-token
# vocabulary trained on it), cached in fp32 (the dtype the head drafts against on this CPU), then scored on the fixed
# held-out set (benchmarks/data/heldout-9900000) against the shipped head. Resumable: rerun continues the cache and
# the run (--resume); TRAIN_SECONDS bounds training. SHARDS=N trains on the cache's first N complete shards (of 256
# answers each) without caching more: a read-only view (links to those shards, the meta's count cut to them), for a
# session without the time to finish the cache (the forty-fourth: SHARDS=14 TRAIN_SECONDS=2820,
# stopped by hand after checkpoint-200 and scored with followup-2026-11-29-cpu-head.sh HEAD=…/checkpoint-200).
#   benchmarks/campaigns/train-2026-11-29-eagle3-cpu.sh
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1
M=/work/main R=/work/runs/cpu29 BATCH=${BATCH:-1200000}
SHIPPED=$M/src/specdec/models/drafts/smollm2-135m-eagle3
CACHE=$R/primary-$BATCH RUN=${RUN:-$R/eagle3-cpu-$BATCH} HO=$R/primary-heldout9
mkdir -p $R && cd $R
echo "== cache $(date -Is) $(lscpu | grep 'Model name') commit $(git -C $M rev-parse --short HEAD)"
[ -f answers-$BATCH.jsonl ] || gunzip -c $M/benchmarks/data/self-intents-$BATCH/answers-*.jsonl.gz > answers-$BATCH.jsonl
sha256sum answers-$BATCH.jsonl; wc -l answers-$BATCH.jsonl
if [ -n "${SHARDS:-}" ]; then  # the first SHARDS shards as a cache of their own
  VIEW=$CACHE-first$SHARDS RUN=${RUN%-first*}-first$SHARDS
  mkdir -p $VIEW && for i in $(seq 0 $((SHARDS - 1))); do ln -sfn $CACHE/shard-$(printf %05d $i) $VIEW/; done
  python -c "import json,sys; m=json.load(open('$CACHE/meta.json')); m['sequences']=min(m['sequences'],$SHARDS*m['shard_size']); json.dump(m,open('$VIEW/meta.json','w'),indent=1)"
  CACHE=$VIEW
else
  specdec data primary --answers answers-$BATCH.jsonl --output $CACHE --max-len 256 --batch-size 16 --dtype fp32 \
    --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
fi
if [ ! -f $HO/meta.json ]; then
  gunzip -c $M/benchmarks/data/heldout-9900000/answers-*.jsonl.gz > heldout-9900000.jsonl
  specdec data primary --answers heldout-9900000.jsonl --output $HO --max-len 256 --batch-size 16 --dtype fp32 \
    --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
fi
echo "== train $(date -Is)"
timeout "${TRAIN_SECONDS:-3600}" specdec train eagle3 --cache "$CACHE" --init-from $SHIPPED \
  --steps "${STEPS:-1200}" --batch-size 16 --max-batch-tokens 4096 --ttt-steps 4 --lr "${LR:-5e-5}" --warmup 30 \
  --eval-every 100 --save-every 100 --eval-sequences 80 --bf16 auto --output "$RUN" --resume 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== held-out $(date -Is) (train exit ${PIPESTATUS[0]})"
[ -d "$RUN/best" ] && (cd $M && python benchmarks/campaigns/heldout_eagle3.py --whole --cache $HO \
  --head shipped=$SHIPPED --head cpu-$BATCH=$RUN/best --sequences 240 \
  --out $R/heldout_eagle3_2026-11-29.json --markdown $R/HELDOUT_EAGLE3_2026-11-29.md)
echo "== done $(date -Is)"
