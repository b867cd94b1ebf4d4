#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20: the head over 8,499 tokens (train-2026-11-27c-eagle3-vocab.sh,
# given as HEAD_DIR) against the shipped 2,048-token head, in one run, each alone as a tree (`int8:tree-2:eagle3:`,
# the results page's "trained drafter alone" row) and inside the default (`lookup+bf16:eagle3:`): our plain decoding
# as the baseline (no HF rows), 5 Spec-Bench prompts per task (30) x 128 tokens, greedy, fp32 target. Run with the
# machine to itself, from a worktree at a fixed commit:
#   HEAD_DIR=/work/runs/eagle3-vocab8k/best benchmarks/campaigns/bench-2026-11-27d-vocab-head.sh
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=${HEAD_DIR:?the head to compare}
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:smollm2-135m-eagle3,int8:tree-2:eagle3:$H,lookup+bf16:eagle3:smollm2-135m-eagle3,lookup+bf16:eagle3:$H" \
  --out "benchmarks/results/vocab_head_ab_$(date -u +%Y-%m-%d_%H%M).json" --markdown benchmarks/VOCAB_HEAD_AB_2026-11-27.md "$@"
