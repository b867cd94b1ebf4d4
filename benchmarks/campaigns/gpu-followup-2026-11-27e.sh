#!/bin/bash
# Session 2026-11-27 (twenty-eighth), issue 20: the CPU side of the lease that ran train-gpu-2026-11-27d.sh (8 GPU
# batches 1500000, 1700000-2000000, 2600000-2800000 cached with layers 0,2,15,27,29; the widened head 741 steps +
# two continuations on the warm machine (750 and 650 steps), Tandem 428 steps and the draft 1,507 side by side;
# everything in /work/runs/gpu-train4). Nothing is trained here except the new secondary's router:
#   1. the heads per source on the CPU caches' held-out tails, and on the target's own Spec-Bench answers;
#   2. the Tandem secondary and the draft against the shipped ones (`eval tandem`) on two caches no run read (this
#      step stopped at the shipped draft's folder, which `eval tandem` could not read then: rerun by
#      eval-2026-11-27e-tandem-draft.sh);
#   3. the router of the new secondary (`train router` on primary-intents2, the shipped router's settings);
#   4. the A/Bs on the bench: the head (30 prompts, bench-2026-11-27d-vocab-head.sh) and Tandem / the draft at
#      equal tokens (60 prompts, as TANDEM_GPU_AB_2026-11-27), our plain as the baseline in the same run.
# Runs from a detached worktree of the commit under test (/work/bench-tree); results are written into /work/main.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs G=/work/runs/gpu-train4 D=/work/runs/specbench-diag
SHIPPED=$M/src/specdec/models/drafts
HEAD=$G/head3/best TANDEM=$R/tandem-gpu4 DRAFT=$G/back/draft/export/smollm2-135m-draft
cp -n $SHIPPED/smollm2-135m-draft/draft_vocab.json $DRAFT/
cp -n $SHIPPED/smollm2-135m-tandem/draft_vocab.json $G/back/tandem/export/smollm2-135m-tandem/
if [ ! -d $TANDEM ]; then
  REBUILT=$(cd /work/bench-tree && python -c "from specdec.drafters.factory import tandem_folder; \
print(tandem_folder('$G/back/tandem/export/smollm2-135m-tandem'))" | tail -1)
  cp -r "$REBUILT" $TANDEM && cp $G/back/tandem/train_config.json $TANDEM/ && cp $G/back/tandem/log.jsonl $TANDEM/train_log.jsonl
fi
OLDTANDEM=$(cd /work/bench-tree && python -c "from specdec.drafters.factory import tandem_folder; \
print(tandem_folder('smollm2-135m-tandem'))" | tail -1)
echo "== heads $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --cache $R/primary-intents4 \
  --cache $R/primary-gpu1 --cache $R/primary-passages1 --cache $R/primary-sharegpt2 \
  --head shipped=$SHIPPED/smollm2-135m-eagle3 --head gpu4-run1=$G/back/head/best --head gpu4-run3=$HEAD \
  --sequences 32 --out $M/benchmarks/results/heldout_eagle3_2026-11-27e.json \
  --markdown $M/benchmarks/HELDOUT_EAGLE3_2026-11-27e.md)
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --whole \
  $(for t in math_reasoning mt_bench qa rag summarization translation; do echo --cache $D/primary-$t-2048; done) \
  --head shipped=$SHIPPED/smollm2-135m-eagle3 --head gpu4-run3=$HEAD --sequences 10 \
  --out $M/benchmarks/results/specbench_head_diag_2026-11-27e.json \
  --markdown $M/benchmarks/SPECBENCH_HEAD_DIAG_2026-11-27e.md)
echo "== tandem and draft $(date -Is) (exit $?)"
(cd /work/bench-tree && specdec eval tandem --model tandem-shipped=$OLDTANDEM --model tandem-gpu4=$TANDEM \
  --model draft-shipped=$SHIPPED/smollm2-135m-draft --model draft-gpu4=$DRAFT \
  --heldout-cache chat-gpu1=$R/primary-gpu1 --heldout-cache chat-cpu4=$R/primary-intents4 --sequences 64 \
  --out $M/benchmarks/results/tandem_gpu_eval_2026-11-27e.json --markdown $M/benchmarks/TANDEM_GPU_EVAL_2026-11-27e.md)
echo "== router $(date -Is) (exit $?)"
(cd /work/runs && specdec train router --tandem $TANDEM --cache $R/primary-intents2 --steps 150 --gamma 5)
echo "== head A/B $(date -Is) (exit $?)"
(cd /work/bench-tree && HEAD_DIR=$HEAD bash benchmarks/campaigns/bench-2026-11-27d-vocab-head.sh \
  --out $M/benchmarks/results/gpu_head_ab_2026-11-27e.json --markdown $M/benchmarks/GPU_HEAD_AB_2026-11-27e.md)
echo "== Tandem / draft A/B $(date -Is) (exit $?)"
(cd /work/bench-tree && specdec bench spec --per-task 10 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:$DRAFT,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem:$TANDEM \
  --out $M/benchmarks/results/tandem_draft_ab_2026-11-27e.json --markdown $M/benchmarks/TANDEM_DRAFT_AB_2026-11-27e.md)
echo "== done $(date -Is) (exit $?)"
