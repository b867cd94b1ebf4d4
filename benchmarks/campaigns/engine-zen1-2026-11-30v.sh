#!/bin/bash
# Session 2026-11-30 (fifty-fifth), issue 20: on an AVX2-only CPU (AMD EPYC of family 23, Zen 1; no AVX-512, no bf16
# kernels) does the compiled engine still pay over the eager one, and where does plain decoding sit against the
# copy-bandwidth bound? `specdec bench engine` on the SmolLM2-135M shape (random weights, fp32), HF generate, our
# eager and our compiled engine in one run, interleaved rounds; the AVX-512 EPYC's page is ENGINE_SPEED_CPU.md.
# From the worktree at a fixed commit, the machine to itself:
#   (nohup benchmarks/campaigns/engine-zen1-2026-11-30v.sh COMMIT > /work/runs/engine-zen1.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "engine speed"
M=/work/main N=engine_speed_zen1_2026-11-30v
specdec bench engine --shapes smollm2-135m --engines eager,compiled --new-tokens 32 --repeats 5 \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/ENGINE_SPEED_ZEN1_2026-11-30v.md
echo "== done $(date -Is)"
