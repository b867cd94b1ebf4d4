#!/bin/bash
# Session 2026-11-30 (forty-eighth), after bench-2026-11-30b-bild100.sh: BiLD with prompt lookup (the drafter
# `generate --method bild` uses) on chat prompts, where there is no reference to score: 5 Spec-Bench prompts a task
# (30, first turn) at alpha_RB 3 (the default), 5 and 8, against plain decoding and lossless SpS with lookup. What a
# user of --method bild gets outside summaries: speed, and how far the text moves from plain decoding's (ROUGE-L
# agreement). `--articles 1` because the sweep always runs CNN/DM; 64 new tokens, greedy. Worktree at commit $1.
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bild chat"
specdec bench bild --drafters prompt-lookup --fallback 0.5 --rollback 3,5,8 --tandem-gamma "" \
  --articles 1 --per-task 5 --max-new-tokens 64 \
  --out benchmarks/results/bild_chat_2026-11-30c.json --markdown benchmarks/BILD_CHAT_2026-11-30c.md \
  --plot benchmarks/results/bild_chat_2026-11-30c.png
echo "== done $(date -Is) (exit $?)"
