#!/bin/bash
# Session 2026-11-27 (twenty-sixth), issue 20: the default drafter with the shipped EAGLE-3 head against the same
# drafter with the head continued on the H200 (train-gpu-2026-11-27.sh and its second run; given as HEAD_DIR), in
# one run: our plain decoding as the baseline (no HF rows: an A/B of two heads; the results page has the HF
# columns), 10 Spec-Bench prompts per task (60) x 128 tokens, greedy, fp32 target. Run with the machine to
# itself, from a worktree at a fixed commit:
#   HEAD_DIR=/work/runs/gpu-train2/best benchmarks/campaigns/bench-2026-11-27b-gpu-head.sh
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
specdec bench spec --per-task 10 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "lookup+bf16:eagle3:smollm2-135m-eagle3,lookup+bf16:eagle3:${HEAD_DIR:?the head to compare}" \
  --out "benchmarks/results/gpu_head_ab_$(date -u +%Y-%m-%d_%H%M).json" --markdown benchmarks/GPU_HEAD_AB_2026-11-27.md "$@"
