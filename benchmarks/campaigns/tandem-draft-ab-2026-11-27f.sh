#!/bin/bash
# Session 2026-11-27 (twenty-ninth), issue 20: step 4 of gpu-followup-2026-11-27f.sh at 30 prompts (5 per task; the
# 60 of TANDEM_DRAFT_AB_2026-11-27e would take ~30 minutes on this slower machine): the lease's Tandem secondary
# and draft against the shipped ones, our plain as the baseline in the same run, greedy, fp32 target. Run with the
# machine to itself from a detached worktree of the commit under test (/work/bench-tree).
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs G=/work/runs/gpu-train5
TANDEM=$R/tandem-gpu5 DRAFT=$G/back/draft/export/smollm2-135m-draft
cd /work/bench-tree && specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:$DRAFT,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem:$TANDEM \
  --out $M/benchmarks/results/tandem_draft_ab_2026-11-27f.json --markdown $M/benchmarks/TANDEM_DRAFT_AB_2026-11-27f.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is) (exit $?)"
