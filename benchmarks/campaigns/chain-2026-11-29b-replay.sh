#!/bin/bash
# Session 2026-11-29 (forty-fifth), issue 20, CAMPAIGN.md next run 2 on a CPU with BF16 kernels (the faster EPYC):
# the whole chain of the thirty-fourth session's lr 3e-5 replay head, rebuilt from committed data and ../shared, then
# scored. Each stage is the earlier session's own script or command, in order, so the run is that run again with the
# training carried to its planned 300 steps (the thirty-fourth stopped after 200 for time):
#   1. the German -> English answers (data-2026-11-27g-backtranslate.sh, COUNT=6000: 2,541 answers then);
#   2. their primary cache with the first 6,400 answers of self-intents-2600000 (`primary-bt-i`, as
#      train-2026-11-27g-eagle3-steered.sh built it with GENERAL=6400);
#   3. the replay cache over answers 1,001-1,100 of every committed self-intents batch and `train eagle3 --init-from`
#      the shipped head, lr 3e-5 (train-2026-11-28-eagle3-replay.sh, STEPS=300);
#   4. the scores against the shipped head (followup-2026-11-27g-steered.sh, NO_BENCH=1: fixed held-out set and
#      Spec-Bench per task, bf16 caches as the thirty-fourth session's scores), from the worktree /work/bench-tree.
# Every stage resumes or skips what is done, so rerunning the script continues it.
#   benchmarks/campaigns/chain-2026-11-29b-replay.sh
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1
M=/work/main R=/work/runs C=/work/main/benchmarks/campaigns
B=$R/backtranslate-6000 BT=$R/primary-bt-i GENERAL_FILE=$R/general-2600000-6400.jsonl
mkdir -p $R && cd $R
echo "== chain $(date -Is) $(lscpu | grep 'Model name') commit $(git -C $M rev-parse --short HEAD)"
if [ ! -f $B/stage2-answers.txt ]; then
  COUNT=6000 B=$B bash $C/data-2026-11-27g-backtranslate.sh | tee $B.log
  grep '== done' $B.log | sed 's/.*stage 2 answers //' > $B/stage2-answers.txt
fi
BT_FILE=$(cat $B/stage2-answers.txt)
[ -f "$GENERAL_FILE" ] || gunzip -c $M/benchmarks/data/self-intents-2600000/answers-*.jsonl.gz | head -n 6400 \
  > "$GENERAL_FILE"
echo "== bt cache $(date -Is)"
sha256sum "$BT_FILE" "$GENERAL_FILE"; wc -l "$BT_FILE" "$GENERAL_FILE"
specdec data primary --answers "$BT_FILE" --answers "$GENERAL_FILE" --output $BT --max-len 256 \
  --batch-size 16 --dtype bf16 --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== replay cache and training $(date -Is)"
BT=$BT STEPS=${STEPS:-300} TRAIN_SECONDS=${TRAIN_SECONDS:-3600} bash $C/train-2026-11-28-eagle3-replay.sh
echo "== scores $(date -Is)"
HEAD=$R/eagle3-replay-k/best LABEL=replay-lr3e-5 TAG=2026-11-29b NO_BENCH=1 bash $C/followup-2026-11-27g-steered.sh
echo "== chain done $(date -Is)"
