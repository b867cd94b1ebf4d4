#!/bin/bash
# Session 2026-11-30 (fifty-fifth), issue 20: under the compiled (fast) engine on the AVX2-only EPYC the default drafter
# ran 1.31x compiled plain (FAST_ZEN1_2026-11-30w.md), its eager head costing c 0.044 of a compiled step. Does the
# trained head still earn its place there over prompt lookup alone? Our compiled plain decoding, the default and
# prompt lookup on the fast engine, one run, 30 Spec-Bench prompts x 128 tokens, greedy, fp32 (no HF rows: the ratio
# asked is between our own rows; HF's is in FAST_ZEN1_2026-11-30w.md).
# From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/fast-lookup-zen1-2026-11-30x.sh COMMIT > /work/runs/fast-lookup-zen1.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "fast engine: default against lookup"
M=/work/main N=fast_lookup_zen1_2026-11-30x
export HF_HUB_OFFLINE=1
timeout 2700 specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine fast --no-hf \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3,prompt-lookup \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/FAST_LOOKUP_ZEN1_2026-11-30x.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
