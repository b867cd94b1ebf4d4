#!/bin/bash
# Session 2026-11-30 (fiftieth), issue 20: BiTA on the compiled CPU engine at the shapes `1` (a 4-wide block, where
# compiled blocks cost about a step) and `2` (6 wide: 1.25 steps compiled in BITA_COMPILED_2026-11-30l.md), the
# shipped adapter, greedy, 30 prompts, the fast engine only, its plain decoding as the baseline. From the worktree.
#   nohup benchmarks/campaigns/bench-2026-11-30m-bita-compiled-shapes.sh COMMIT > /work/runs/bench-30m.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita compiled shapes"
specdec bench spec --per-task 5 --max-new-tokens 128 --engine fast --no-hf \
  --drafters "bita[1]:smollm2-135m-bita,bita[2]:smollm2-135m-bita" \
  --out benchmarks/results/bita_compiled_shapes_2026-11-30m.json --markdown benchmarks/BITA_COMPILED_SHAPES_2026-11-30m.md
echo "== done $(date -Is)"
