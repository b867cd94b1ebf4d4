#!/bin/bash
# Session 2026-11-27 (thirty-second), issue 20: the dynamic tree (`dtree-K:`) against the top-k tree under sampling.
# Greedy, the two trees tied at equal nodes (DTREE_AB_2026-11-27i.md: 1.57x against 1.58x alone). Sampled, a top-k
# tree's chain is itself sampled from the head, where the dynamic tree proposes the head's likeliest paths at every
# depth, which is what a coupled target sample most often takes. One run, our plain decoding (seeded) the baseline,
# the default bench's 30 Spec-Bench prompts x 128 tokens, temperature 0.8, top-p 0.95, the coupled rule, adaptive
# gamma. Run with the machine to itself, from a worktree at a fixed commit; writes its own results:
#   benchmarks/campaigns/sampled-dtree-ab-2026-11-27i.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=smollm2-135m-eagle3
STAMP=$(date -u +%Y-%m-%d_%H%M)
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf --temperature 0.8 --top-p 0.95 \
  --verify coupled --drafters "int8:tree-2:eagle3:$H,int8:dtree-2:eagle3:$H,lookup+int8:tree-2:eagle3:$H,lookup+int8:dtree-2:eagle3:$H" \
  --out "benchmarks/results/sampled_dtree_ab_$STAMP.json" --markdown "benchmarks/SAMPLED_DTREE_AB_$STAMP.md" "$@"
