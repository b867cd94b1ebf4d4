#!/bin/bash
# Session 2026-11-27 (thirty-first), issue 20: the new default (the head's width-2 tree behind prompt lookup,
# `lookup+int8:tree-2:eagle3:`) against the chain default before it (`lookup+bf16:eagle3:`) for sampled requests
# (temperature 0.8, top-p 0.95, seeded per prompt, the coupled rule), the default bench's 30 Spec-Bench prompts x 128
# tokens, our plain decoding (seeded, sampled) the baseline in the same run; every method's text is checked against
# it. The tree was chosen on greedy runs only (tree-width-ab / default-confirm-2026-11-27h.sh), and the head's tree
# alone ran 1.03x sampled against the chain default's 1.26x in SAMPLED_BENCH_2026-11-27.md. Run with the machine to
# itself, from a worktree at a fixed commit; writes its own results (the date and time in the name):
#   benchmarks/campaigns/sampled-default-ab-2026-11-27h.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=smollm2-135m-eagle3
STAMP=$(date -u +%Y-%m-%d_%H%M)
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf --temperature 0.8 --top-p 0.95 \
  --verify coupled --drafters "lookup+bf16:eagle3:$H,lookup+int8:tree-2:eagle3:$H,lookup+bf16:tree-2:eagle3:$H" \
  --out "benchmarks/results/sampled_default_ab_$STAMP.json" --markdown "benchmarks/SAMPLED_DEFAULT_AB_$STAMP.md" "$@"
