#!/bin/bash
# Session 2026-11-30 (fifty-fourth), issue 20: on the family-23 AMD EPYC (AVX2 only) the default's verify blocks cost
# 1.23 one-token steps (MACHINE_ZEN1_2026-11-30t.md; 1.15-1.18 on the AVX-512 EPYC), so its top-2 tree, which
# verifies more rows a step than a chain, may be the wrong shape here. The default beside the same head as a chain
# behind lookup (`lookup+int8:eagle3:`), our plain decoding the baseline in the same run: 30 Spec-Bench prompts x 128
# tokens, greedy, fp32 target, eager, no HF rows. From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/tree-chain-zen1-2026-11-30u.sh COMMIT > /work/runs/zen1-chain.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "tree/chain on zen1"
M=/work/main N=tree_chain_zen1_2026-11-30u H=smollm2-135m-eagle3
export HF_HUB_OFFLINE=1
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "lookup+int8:tree-2:eagle3:$H,lookup+int8:eagle3:$H" \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/TREE_CHAIN_ZEN1_2026-11-30u.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
