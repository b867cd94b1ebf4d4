#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20: the Tandem secondary trained on the GPU (train-gpu-2026-11-27b.sh:
# the shipped secondary continued 1,079 steps on 8 GPU batches, 3.36 M answer positions; held-out in
# TANDEM_GPU_EVAL_2026-11-27.md: accepted per SPEED block of 3 0.61-0.66 -> 0.86-0.92) gets its router on the CPU
# (`train router` on primary-intents2, which neither secondary trained on nor the evaluation read; settings of the
# shipped router), then an A/B on 60 Spec-Bench prompts (10 per task) with our plain as the baseline: the int8
# draft, the shipped secondary, the new one with and without the router, all int8 + the 2,048-token head.
# Runs from a detached worktree of the commit under test (/work/bench-tree); results are written into /work/main.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main NEW=/work/runs/tandem-gpu3 G=/work/runs/gpu-train3/back/tandem
if [ ! -d $NEW ]; then
  REBUILT=$(cd /work/bench-tree && python -c "from specdec.drafters.factory import tandem_folder; \
print(tandem_folder('$G/export/smollm2-135m-tandem'))" | tail -1)
  cp -r "$REBUILT" $NEW && cp $G/train_config.json $NEW/ && cp $G/log.jsonl $NEW/train_log.jsonl
fi
echo "== router $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/runs && specdec train router --tandem $NEW --cache /work/runs/primary-intents2 --steps 150 --gamma 5)
echo "== bench $(date -Is) (exit $?)"
(cd /work/bench-tree && specdec bench spec --per-task 10 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem:$NEW,int8:vocab-2048:tandem+router:$NEW \
  --out $M/benchmarks/results/tandem_gpu_ab_2026-11-27.json --markdown $M/benchmarks/TANDEM_GPU_AB_2026-11-27.md)
echo "== done $(date -Is) (exit $?)"
