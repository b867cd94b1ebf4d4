#!/bin/bash
# Session 2026-11-27 (twenty-ninth), issue 20: the CPU side of the lease that ran train-gpu-2026-11-27d.sh with
# DRAFT_EXTRA=0 on the seven batches the drafters had seen least (record gpu_train_2026-11-27f.json; outputs in
# /work/runs/gpu-train5/back). This machine is new (Intel Xeon, AMX): the CPU caches of earlier sessions are gone,
# so the held-out set is fresh: 320 self-written requests of a seed no run has used (9900000, answered in bf16
# here; committed as benchmarks/data/heldout-9900000: ANSWERS= that file, gunzipped), cached with the lease's
# hidden layers. Then, sequentially:
#   1. the heads on all of it (`--whole`: no run read it);
#   2. the Tandem secondary and the draft against the shipped ones (`eval tandem`) on it;
#   3. the A/Bs on the bench: the head (30 prompts, bench-2026-11-27d-vocab-head.sh) and Tandem / the draft
#      (60 prompts, as TANDEM_DRAFT_AB_2026-11-27e), our plain as the baseline in the same run.
# On this machine plain decoding runs at 19 tok/s (42-49 on the AMD EPYC) and step 3's head A/B took 15 minutes, so
# the 60-prompt Tandem / draft A/B (~30 minutes) was stopped a minute in and run at 30 prompts by
# tandem-draft-ab-2026-11-27f.sh.
# Runs from a detached worktree of the commit under test (/work/bench-tree); results are written into /work/main.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs G=/work/runs/gpu-train5 HO=/work/runs/primary-heldout9
SHIPPED=/work/bench-tree/src/specdec/models/drafts
HEAD=$G/back/head/best TANDEM=$R/tandem-gpu5 DRAFT=$G/back/draft/export/smollm2-135m-draft
ANSWERS=${ANSWERS:?the heldout answers file}
cp -n $SHIPPED/smollm2-135m-draft/draft_vocab.json $DRAFT/
cp -n $SHIPPED/smollm2-135m-tandem/draft_vocab.json $G/back/tandem/export/smollm2-135m-tandem/
echo "== held-out cache $(date -Is) $(lscpu | grep 'Model name')"
[ -f $HO/meta.json ] || specdec data primary --answers $ANSWERS --output $HO --max-len 256 --batch-size 16 \
  --dtype bf16 --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
if [ ! -d $TANDEM ]; then
  REBUILT=$(cd /work/bench-tree && python -c "from specdec.drafters.factory import tandem_folder; \
print(tandem_folder('$G/back/tandem/export/smollm2-135m-tandem'))" 2>/dev/null | tail -1)
  cp -r "$REBUILT" $TANDEM && cp $G/back/tandem/train_config.json $TANDEM/ && cp $G/back/tandem/log.jsonl $TANDEM/train_log.jsonl
fi
echo "== heads $(date -Is)"
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --whole --cache $HO \
  --head shipped=$SHIPPED/smollm2-135m-eagle3 --head gpu5=$HEAD --sequences 240 \
  --out $M/benchmarks/results/heldout_eagle3_2026-11-27f.json --markdown $M/benchmarks/HELDOUT_EAGLE3_2026-11-27f.md)
echo "== tandem and draft $(date -Is) (exit $?)"
(cd /work/bench-tree && specdec eval tandem --model tandem-shipped=$SHIPPED/smollm2-135m-tandem --model tandem-gpu5=$TANDEM \
  --model draft-shipped=$SHIPPED/smollm2-135m-draft --model draft-gpu5=$DRAFT \
  --heldout-cache chat-heldout9=$HO --sequences 240 --run tandem-gpu5=$G/back/tandem --run draft-gpu5=$G/back/draft \
  --out $M/benchmarks/results/tandem_gpu_eval_2026-11-27f.json --markdown $M/benchmarks/TANDEM_GPU_EVAL_2026-11-27f.md \
  --plot $M/benchmarks/results/tandem_gpu_budget_2026-11-27f.png 2>&1 | grep -v -E "it/s\]|s/it\]")
echo "== head A/B $(date -Is) (exit $?)"
(cd /work/bench-tree && HEAD_DIR=$HEAD bash benchmarks/campaigns/bench-2026-11-27d-vocab-head.sh \
  --out $M/benchmarks/results/gpu_head_ab_2026-11-27f.json --markdown $M/benchmarks/GPU_HEAD_AB_2026-11-27f.md 2>&1 | grep -v -E "it/s\]|s/it\]")
echo "== Tandem / draft A/B $(date -Is) (exit $?)"
(cd /work/bench-tree && specdec bench spec --per-task 10 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:$DRAFT,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem:$TANDEM \
  --out $M/benchmarks/results/tandem_draft_ab_2026-11-27f.json --markdown $M/benchmarks/TANDEM_DRAFT_AB_2026-11-27f.md 2>&1 | grep -v -E "it/s\]|s/it\]")
echo "== done $(date -Is) (exit $?)"
