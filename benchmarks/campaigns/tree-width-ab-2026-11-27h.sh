#!/bin/bash
# Session 2026-11-27 (thirty-first), issue 20: how wide a tree the shipped EAGLE-3 head should draft. `tree-K:` adds,
# at every depth of the head's chain, its next K-1 likeliest tokens; only K = 2 was ever measured, on machines where a
# verify block cost 1.04-1.16 one-token steps, so wider trees may pay for themselves. One run, our plain decoding the
# baseline (no HF rows), 5 Spec-Bench prompts per task (30) x 128 tokens, greedy, fp32 target: the head alone at
# K = 2, 3, 4, and inside the default (`lookup+`) as a chain, K = 2 and K = 3. Run with the machine to itself, from
# a worktree at a fixed commit; writes its own results (the date and time in the name):
#   benchmarks/campaigns/tree-width-ab-2026-11-27h.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=smollm2-135m-eagle3
STAMP=$(date -u +%Y-%m-%d_%H%M)
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:$H,int8:tree-3:eagle3:$H,int8:tree-4:eagle3:$H,lookup+bf16:eagle3:$H,lookup+int8:tree-2:eagle3:$H,lookup+int8:tree-3:eagle3:$H" \
  --out "benchmarks/results/tree_width_ab_$STAMP.json" --markdown "benchmarks/TREE_WIDTH_AB_$STAMP.md" "$@"
