#!/bin/bash
# Session 2026-11-28 (thirty-seventh), issue 20, CAMPAIGN.md next run 7: the tree default on a machine of another
# kind. `lookup+int8:tree-2:eagle3:` was chosen on a slow AMD EPYC (verify blocks of 5-6 tokens at 1.04-1.09 steps);
# this session's 2-core Intel Xeon (Cascade Lake: AVX-512 VNNI, no BF16, no AMX) decodes plain fp32 at ~11 tok/s and
# runs bf16 matrix products ~3x slower than fp32, so the chain here is the int8 one (the tree-width A/B of
# 2026-11-27h compared a bf16 chain). One run, our plain decoding the baseline (no HF rows), the default bench's 5
# Spec-Bench prompts per task (30) x 128 tokens, greedy, fp32 target: the head alone as a chain and as trees of width
# 2 and 3, and inside the default (`lookup+`) as a chain and trees of width 2, 3 and 4. Run with the machine to
# itself, from a worktree at a fixed commit; writes its own results (the date and time in the name):
#   benchmarks/campaigns/tree-chain-ab-2026-11-28.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
H=smollm2-135m-eagle3
STAMP=$(date -u +%Y-%m-%d_%H%M)
D="int8:eagle3:$H,int8:tree-2:eagle3:$H,int8:tree-3:eagle3:$H"
D="$D,lookup+int8:eagle3:$H,lookup+int8:tree-2:eagle3:$H,lookup+int8:tree-3:eagle3:$H,lookup+int8:tree-4:eagle3:$H"
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf --drafters "$D" \
  --out "benchmarks/results/tree_chain_ab_$STAMP.json" --markdown "benchmarks/TREE_CHAIN_AB_$STAMP.md" "$@"
