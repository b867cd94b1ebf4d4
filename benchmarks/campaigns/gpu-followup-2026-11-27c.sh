#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20: the CPU side of the lease that ran train-gpu-2026-11-27b.sh
# (8 GPU batches 2100000-2800000 cached with layers 0,2,15,27,29; head 217 steps + two continuations, Tandem 1,079
# steps; everything in /work/runs/gpu-train3). Two held-out checks, nothing trained here:
#   1. the heads, per source, on the caches no GPU run read (heldout_eagle3.py, as HELDOUT_EAGLE3_2026-11-27b);
#   2. the Tandem secondary against the shipped one (`eval tandem`) on two caches neither trained on.
# Runs from a detached worktree of the commit under test (/work/bench-tree); results are written into /work/main.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs G=/work/runs/gpu-train3
echo "== heads $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --cache $R/primary-intents4 \
  --cache $R/primary-gpu1 --cache $R/primary-passages1 --cache $R/primary-sharegpt2 \
  --head shipped=src/specdec/models/drafts/smollm2-135m-eagle3 --head gpu3-run2=$G/head2 --head gpu3-run3=$G/head3 \
  --sequences 32 --out $M/benchmarks/results/heldout_eagle3_2026-11-27c.json \
  --markdown $M/benchmarks/HELDOUT_EAGLE3_2026-11-27c.md)
echo "== tandem $(date -Is) (exit $?)"
NEW=$G/back/tandem/export/smollm2-135m-tandem
cp -n $M/src/specdec/models/drafts/smollm2-135m-tandem/draft_vocab.json $NEW/
NEWFULL=$(cd /work/bench-tree && python -c "from specdec.drafters.factory import tandem_folder; \
print(tandem_folder('$NEW'))" | tail -1)
OLDFULL=$(cd /work/bench-tree && python -c "from specdec.drafters.factory import tandem_folder; \
print(tandem_folder('smollm2-135m-tandem'))" | tail -1)
echo "new: $NEWFULL shipped: $OLDFULL"
(cd /work/bench-tree && specdec eval tandem --model tandem-shipped=$OLDFULL --model tandem-gpu3=$NEWFULL \
  --heldout-cache chat-gpu1=$R/primary-gpu1 --heldout-cache chat-cpu4=$R/primary-intents4 --sequences 64 \
  --run tandem-gpu3=$G/back/tandem --out $M/benchmarks/results/tandem_gpu_eval_2026-11-27.json \
  --markdown $M/benchmarks/TANDEM_GPU_EVAL_2026-11-27.md --plot $M/benchmarks/results/tandem_gpu_budget_2026-11-27.png)
echo "== done $(date -Is) (exit $?)"
