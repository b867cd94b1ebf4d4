#!/bin/bash
# Session 2026-11-30 (fifty-fifth), issue 20: on the AVX2-only EPYC (family 23, Zen 1) `bench engine` found the compiled
# engine 2.44x the eager one for plain decoding (92 % of the copy-bandwidth bound against 38 %:
# ENGINE_SPEED_ZEN1_2026-11-30v.md), against 1.10x on the AVX-512 EPYC. So what does the compiled (fast) engine give
# on Spec-Bench here, and does the best lossless method reach 3x HF generate on this kind of CPU too? HF plain, our
# plain decoding and the default drafter on the fast engine, one run: 30 prompts x 128 tokens, greedy, fp32 (the
# command of HF_HEADLINE_2026-11-29c_fast.md). The eager rows of the same prompts: MACHINE_ZEN1_2026-11-30t.md.
# From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/fast-zen1-2026-11-30w.sh COMMIT > /work/runs/fast-zen1.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "fast engine check"
M=/work/main N=fast_zen1_2026-11-30w
export HF_HUB_OFFLINE=1
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine fast \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/FAST_ZEN1_2026-11-30w.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
