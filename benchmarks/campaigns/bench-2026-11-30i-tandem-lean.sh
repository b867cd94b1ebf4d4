#!/bin/bash
# Session 2026-11-30 (forty-ninth), issue 20, the Tandem targets: Tandem + SPEED and the equal-budget draft, both int8
# with the trimmed head as shipped, after the Tandem secondary's catch-up block (the primary's states as given layer
# inputs) took the engine's lean path (it went through transformers' forward): c against the draft's, and Tandem
# against SpS with the draft, on the default Spec-Bench subset, greedy, 30 prompts, our plain decoding as the
# baseline in the same run. From the worktree at the given commit.
#   nohup benchmarks/campaigns/bench-2026-11-30i-tandem-lean.sh COMMIT > /work/runs/bench-30i.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "tandem lean"
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:smollm2-135m-draft" \
  --out benchmarks/results/tandem_lean_2026-11-30i.json --markdown benchmarks/TANDEM_LEAN_2026-11-30i.md
echo "== done $(date -Is)"
