#!/bin/bash
# Session 2026-11-30 (fifty-fourth), issue 20: a fourth kind of CPU, an AMD EPYC of family 23 (Zen 1: AVX2 only, no
# AVX-512, no bf16 kernels; plain decoding ~10 tok/s against 42-49 on the family-26 EPYC). Does the default drafter
# still pay, and by how much over HF `generate`? HF plain, HF assisted with prompt lookup, our plain decoding, the
# default (`lookup+int8:tree-2:eagle3:`), prompt lookup and `lookup+bita` (`--method bita`'s default), in one run:
# 30 Spec-Bench prompts x 128 tokens, greedy, fp32 target, eager engine (a compiled engine's build is minutes here).
# From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/machine-zen1-2026-11-30t.sh COMMIT > /work/runs/zen1.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "machine check"
M=/work/main N=machine_zen1_2026-11-30t H=smollm2-135m-eagle3
export HF_HUB_OFFLINE=1
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" \
  --drafters "lookup+int8:tree-2:eagle3:$H,prompt-lookup,lookup+bita:smollm2-135m-bita" \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/MACHINE_ZEN1_2026-11-30t.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
