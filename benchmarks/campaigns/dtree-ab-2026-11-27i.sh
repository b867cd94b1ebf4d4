#!/bin/bash
# Session 2026-11-27 (thirty-second), issue 20: the EAGLE-3 head's tree grown where it is confident (EAGLE-2's dynamic
# tree, `dtree-K:`: K nodes per draft position, chosen by the head's path probabilities from a beam of 4 per depth)
# against its top-k tree (`tree-K:`: the chain plus K-1 sibling leaves at each depth), alone and behind prompt lookup.
# At fixed gamma on 12 Spec-Bench prompts (a probe, tokens per target call only) dtree-2 brought 2.14 / 2.28 tokens per
# call at gamma 3 / 4 against tree-2's 2.06 / 2.14, dtree-3 2.25 / 2.37 against tree-3's 2.11 / 2.21, at equal nodes.
# One run, our plain decoding the baseline (no HF rows), 5 Spec-Bench prompts per task (30) x 128 tokens, greedy, fp32
# target, adaptive gamma. Run with the machine to itself, from a worktree at a fixed commit; writes its own results:
#   benchmarks/campaigns/dtree-ab-2026-11-27i.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=smollm2-135m-eagle3
STAMP=$(date -u +%Y-%m-%d_%H%M)
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:$H,int8:dtree-2:eagle3:$H,int8:dtree-3:eagle3:$H,int8:dtree-4:eagle3:$H,lookup+int8:tree-2:eagle3:$H,lookup+int8:dtree-3:eagle3:$H" \
  --out "benchmarks/results/dtree_ab_$STAMP.json" --markdown "benchmarks/DTREE_AB_$STAMP.md" "$@"
