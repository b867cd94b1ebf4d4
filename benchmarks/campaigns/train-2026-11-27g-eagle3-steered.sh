#!/bin/bash
# Session 2026-11-27 (thirtieth), issue 20: the shipped EAGLE-3 head (ac6140726a9cc5be) continued on the CPU on the
# translation / summary requests that data-2026-11-27g-steered-cpu.sh wrote (the head's weakest Spec-Bench tasks:
# 0.84 and 1.10 accepted per chain of 4 on the target's own answers there; seeds 6000000 and 6100000) and the
# German -> English requests of data-2026-11-27g-backtranslate.sh (its stage 2), mixed with the first GENERAL answers of
# the committed self-intents-2600000 batch (general chat the head has trained on, so that it does not forget it).
# One primary cache over all of them (layers 0,2,15,27,29 as the lease's; shuffled, so the 80-sequence selection
# tail spans both), then `train eagle3` from the shipped head with the lease's settings at the CPU's batch (16).
# Resumable: rerun continues the cache and the run (--resume). TRAIN_SECONDS bounds the training.
#   STEERED="answers-A.jsonl answers-B.jsonl" benchmarks/campaigns/train-2026-11-27g-eagle3-steered.sh
# CACHE and RUN name the cache and run folders (defaults: the thirtieth session's), so a new mix starts afresh.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1
M=/work/main R=/work/runs A=~/.cache/specdec/answers
CACHE=${CACHE:-$R/primary-steered-g} RUN=${RUN:-$R/eagle3-steered-g}
cd $R
read -r -a FILES <<< "${STEERED:?the steered answers files, in the answers cache}"
GENERAL_FILE=$R/general-2600000-${GENERAL:=1600}.jsonl
[ -f "$GENERAL_FILE" ] || head -n "$GENERAL" $A/answers-8aa5145bf3bb9b7d.jsonl > "$GENERAL_FILE"
echo "== cache $(date -Is) $(lscpu | grep 'Model name') commit $(git -C $M rev-parse --short HEAD)"
sha256sum "${FILES[@]/#/$A/}" "$GENERAL_FILE"
ANSWERS=(); for f in "${FILES[@]/#/$A/}" "$GENERAL_FILE"; do ANSWERS+=(--answers "$f"); done
specdec data primary "${ANSWERS[@]}" --output "$CACHE" --max-len 256 \
  --batch-size 16 --dtype bf16 --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== train $(date -Is) (exit ${PIPESTATUS[0]})"
timeout "${TRAIN_SECONDS:-2400}" specdec train eagle3 --cache "$CACHE" \
  --init-from $M/src/specdec/models/drafts/smollm2-135m-eagle3 --steps "${STEPS:-1500}" --batch-size 16 \
  --max-batch-tokens 4096 --ttt-steps 4 --lr 1e-4 --warmup 30 --eval-every 100 --save-every 100 \
  --eval-sequences 80 --bf16 auto --output "$RUN" --resume 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is) (exit ${PIPESTATUS[0]})"
