#!/bin/bash
# Session 2026-11-27 (twenty-eighth), issue 20: step 2 of gpu-followup-2026-11-27e.sh again. There `eval tandem` stopped
# at the shipped draft (it read checkpoints only, not folders `train export` writes); from 188bb21 it takes both, and
# this scores the four side by side: the shipped and the lease's Tandem secondary and draft, on two caches no run
# read, with the lease's budget curves. Run from a detached worktree of the commit under test (/work/bench-tree).
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs G=/work/runs/gpu-train4 SHIPPED=/work/main/src/specdec/models/drafts
cd /work/bench-tree && specdec eval tandem --model tandem-shipped=$SHIPPED/smollm2-135m-tandem --model tandem-gpu4=$R/tandem-gpu4 \
  --model draft-shipped=$SHIPPED/smollm2-135m-draft --model draft-gpu4=$G/back/draft/export/smollm2-135m-draft \
  --heldout-cache chat-gpu1=$R/primary-gpu1 --heldout-cache chat-cpu4=$R/primary-intents4 --sequences 64 \
  --run tandem-gpu4=$G/back/tandem --run draft-gpu4=$G/back/draft \
  --out $M/benchmarks/results/tandem_gpu_eval_2026-11-27e.json --markdown $M/benchmarks/TANDEM_GPU_EVAL_2026-11-27e.md \
  --plot $M/benchmarks/results/tandem_gpu_budget_2026-11-27e.png
echo "== done $(date -Is) (exit $?)"
