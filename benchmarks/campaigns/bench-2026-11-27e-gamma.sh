#!/bin/bash
# Session 2026-11-27 (twenty-eighth), issue 20, next run 3 of the last plan: the γ policy of a tree drafter. The
# widened head got 23 % more accepted per call alone, and the adaptive policy spent it on longer drafts whose verify
# cost as much (VOCAB_HEAD_AB_2026-11-27: T(γ+1)/T(1) 1.09 -> 1.17, mean γ 2.24 -> 2.72). Here the head alone as a
# tree (`int8:tree-2:eagle3:`, the results page's "trained drafter alone" row) under the adaptive policy and at
# fixed γ 1, 2, 3, 4 (`--fixed-gamma`), our plain as the baseline in the same run, 5 Spec-Bench prompts per task
# (30) x 128 tokens, greedy, fp32 target. Run with the machine to itself, from a worktree at a fixed commit:
#   HEAD_DIR=smollm2-135m-eagle3 benchmarks/campaigns/bench-2026-11-27e-gamma.sh
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=${HEAD_DIR:-smollm2-135m-eagle3}
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf --fixed-gamma 1,2,3,4 \
  --drafters "int8:tree-2:eagle3:$H" \
  --out "benchmarks/results/tree_gamma_$(date -u +%Y-%m-%d_%H%M).json" --markdown benchmarks/TREE_GAMMA_2026-11-27e.md "$@"
