#!/bin/bash
# Session 2026-11-28 (thirty-seventh), issue 20: the "best lossless >= 3x HF generate" target on a machine of a third
# kind (2-core Intel Xeon, Cascade Lake: AVX-512 VNNI, no BF16, no AMX; plain fp32 decoding ~9 tok/s, a verify block
# of 5-6 tokens as cheap as a one-token step: tree-chain-ab-2026-11-28.sh). One run of the default bench (5 Spec-Bench
# prompts per task, 30 x 128 tokens, greedy, fp32 target): HF generate, our plain decoding and the default drafter,
# each on the eager and the fast (compiled) engine. Run with the machine to itself, from a worktree at a fixed commit;
# writes its own results (the date and time in the name):
#   benchmarks/campaigns/hf-headline-2026-11-28.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
STAMP=$(date -u +%Y-%m-%d_%H%M)
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine eager,fast \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out "benchmarks/results/hf_headline_$STAMP.json" --markdown "benchmarks/HF_HEADLINE_$STAMP.md" "$@"
