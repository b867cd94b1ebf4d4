#!/bin/bash
# Session 2026-12-01 (fifty-eighth), issue 20: does the shipped EAGLE-3 head (the default drafter's) accept less
# where the context holds earlier turns and the target's own earlier answers? No drafter has trained on such
# contexts (no session wrote multi-turn data; data-gpu-2026-12-01-sharegpt.sh is the lease's call for it), so this
# says what that data call is worth before a lease spends time on it. Everything in fp32 (the bench's dtype):
#   1. the target answers the last N ShareGPT conversations with three user turns, round by round (its context in
#      rounds 2 and 3 holds its own earlier answers; the heads were trained on ShareGPT's first turns only);
#   2. a primary cache per round (the head's layers 2, 15, 27), and one of the fixed held-out set heldout-9900000
#      (self-written first-turn requests no run trains on);
#   3. heldout_eagle3.py --whole: greedy agreement per depth and accepted tokens of a chain of 4, per cache.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
M=/work/main D=/work/runs/multiturn-diag N=${N:-48} TAG=${TAG:-2026-12-01}
SHIPPED=$M/src/specdec/models/drafts/smollm2-135m-eagle3
mkdir -p $D
echo "== start $(date -Is) $(lscpu | grep 'Model name') commit $(git -C $M rev-parse --short HEAD)"
zcat ${SHAREGPT:-/work/shared/data/train/sharegpt/prompts.jsonl.gz} \
  | python -c "
import json, sys
rows = [line for line in sys.stdin if len(json.loads(line)['turns']) >= 3]
sys.stdout.writelines(rows[-$N:])" > $D/conversations.jsonl
specdec data answers --prompts conversations:$D/conversations.jsonl --count $N --max-new-tokens 128 \
  --max-prompt-tokens 1024 --dtype fp32 --batch-size 16 2>&1 | grep -v -E "it/s\]|s/it\]" > $D/answers.log
tail -4 $D/answers.log
CACHES=() r=0
while read -r file; do
  r=$((r + 1))
  [ -f $D/primary-round$r/meta.json ] || specdec data primary --dtype fp32 --answers "$file" \
    --output $D/primary-round$r --max-len 2048 --batch-size 4 --hidden-layers 2,15,27 2>&1 | grep -v -E "it/s\]|s/it\]"
  CACHES+=(--cache $D/primary-round$r)
done < <(grep 'answer tokens: ' $D/answers.log | sed 's/.*answer tokens: //')
gunzip -c $M/benchmarks/data/heldout-9900000/answers-*.jsonl.gz > $D/heldout-9900000.jsonl
[ -f $D/primary-heldout9/meta.json ] || specdec data primary --dtype fp32 --answers $D/heldout-9900000.jsonl \
  --output $D/primary-heldout9 --max-len 256 --batch-size 16 --hidden-layers 2,15,27 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== scoring $(date -Is)"
(cd $M && python benchmarks/campaigns/heldout_eagle3.py --whole "${CACHES[@]}" --cache $D/primary-heldout9 \
  --head shipped=$SHIPPED --sequences 400 --out $M/benchmarks/results/multiturn_head_diag_$TAG.json \
  --markdown $M/benchmarks/MULTITURN_HEAD_DIAG_$TAG.md)
echo "== done $(date -Is)"
