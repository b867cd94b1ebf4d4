#!/bin/bash
# Session 2026-12-01 (fifty-seventh), issue 20, deliverable 6: every method sampled (T 0.8, top-p 0.95, the coupled
# rule) with the drafters shipped now, in one run. The last such page (`SAMPLED_BENCH_2026-11-27.md`) predates the
# BiTA adapter's chat continuation, lookup+bita, the int8 tree default and the lean Tandem and BiTA blocks. The 30
# Spec-Bench prompts x 128 tokens of the greedy results page, fp32 target, eager engine, on the AVX2-only EPYC of
# family 23; no HF rows (HF's sampler draws other numbers: its texts and times are not comparable).
# From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/sampled-all-zen1-2026-12-01a.sh COMMIT > /work/runs/sampled-all.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "every method sampled on the AVX2-only EPYC"
M=/work/main N=sampled_all_zen1_2026-12-01a
D=smollm2-135m-draft T=smollm2-135m-tandem B=smollm2-135m-bita H=smollm2-135m-eagle3
export HF_HUB_OFFLINE=1
DRAFTERS="prompt-lookup,int8:vocab-2048:$D,lookup+int8:vocab-2048:$D,int8:vocab-2048:tandem:$T"
DRAFTERS+=",int8:vocab-2048:tandem+router:$T,bita:$B,bita[efficient]:$B,lookup+bita:$B,lookup+int8:tree-2:eagle3:$H"
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --temperature 0.8 --top-p 0.95 --verify coupled --drafters "$DRAFTERS" \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/SAMPLED_ALL_ZEN1_2026-12-01a.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
