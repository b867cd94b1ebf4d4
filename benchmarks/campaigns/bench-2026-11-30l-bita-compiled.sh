#!/bin/bash
# Session 2026-11-30 (fiftieth), issue 20: BiTA on the compiled CPU engine, now that its blocks (mask tokens given by
# their embeddings) run through a compiled step of their own instead of eagerly. The shipped adapter at its CPU
# shape `2`, greedy, 30 prompts, on the eager and the fast (compiled) engine in one run, each engine's plain
# decoding as its baseline. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30l-bita-compiled.sh COMMIT > /work/runs/bench-30l.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita compiled"
specdec bench spec --per-task 5 --max-new-tokens 128 --engine eager,fast --no-hf \
  --drafters "bita[2]:smollm2-135m-bita" \
  --out benchmarks/results/bita_compiled_2026-11-30l.json --markdown benchmarks/BITA_COMPILED_2026-11-30l.md
echo "== done $(date -Is)"
