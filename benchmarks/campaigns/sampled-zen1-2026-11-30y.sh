#!/bin/bash
# Session 2026-11-30 (fifty-sixth), issue 20: sampled decoding on the AVX2-only EPYC of family 23 (Zen 1, no bf16
# kernels), which `MACHINE_ZEN1_2026-11-30t.md` measured greedy only. Our plain decoding, the default drafter
# (`lookup+int8:tree-2:eagle3:`) and prompt lookup under the coupled rule, T 0.8, top-p 0.95, the same 30 Spec-Bench
# prompts x 128 tokens, fp32 target, eager engine, no HF rows (their sampler draws other numbers).
# From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/sampled-zen1-2026-11-30y.sh COMMIT > /work/runs/sampled-zen1.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "sampled on the AVX2-only EPYC"
M=/work/main N=sampled_zen1_2026-11-30y H=smollm2-135m-eagle3
export HF_HUB_OFFLINE=1
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --temperature 0.8 --top-p 0.95 --verify coupled \
  --drafters "lookup+int8:tree-2:eagle3:$H,prompt-lookup" \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/SAMPLED_ZEN1_2026-11-30y.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
