#!/bin/bash
# Session 2026-11-27 (twenty-eighth), issue 20: first_steps.py found the int8 head (`int8:eagle3:`, the results
# page's "trained drafter alone" row is `int8:tree-2:eagle3:`) rejected at the first step after the prompt on 15
# of 15 Spec-Bench prompts and accepted less all along (RAG: 0.00-0.10 kept per step in the first 10 steps against
# 0.20-0.60 in fp32), while the fp32 head starts as it goes on. Here the head tree in int8, bf16 and fp32 under
# the adaptive policy, our plain as the baseline, 5 Spec-Bench prompts per task (30) x 128 tokens, greedy, fp32
# target. Run with the machine to itself, from a worktree at a fixed commit.
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=${HEAD_DIR:-smollm2-135m-eagle3}
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:$H,bf16:tree-2:eagle3:$H,tree-2:eagle3:$H" \
  --out "benchmarks/results/head_precision_$(date -u +%Y-%m-%d_%H%M).json" --markdown benchmarks/HEAD_PRECISION_2026-11-27e.md "$@"
