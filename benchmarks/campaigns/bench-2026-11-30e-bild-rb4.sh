#!/bin/bash
# Session 2026-11-30 (forty-eighth), after bench-2026-11-30d-bild-prompt-only.sh (alpha_RB 3, 5, 8): alpha_RB 4 with
# prompt-only lookup, between the default 3 (chat texts repeat no more than plain decoding's; 1.69x on news) and 5
# (2.19x on news; chat repeats more). Same prompts: the first 50 CNN/DM articles and 5 Spec-Bench prompts a task,
# 64 new tokens, greedy, against plain decoding and lossless SpS with the same lookup. Worktree at commit $1.
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bild prompt-only"
specdec bench bild --drafters prompt-only-lookup --fallback 0.5 --rollback 4 --tandem-gamma "" \
  --articles 50 --per-task 5 --max-new-tokens 64 \
  --out benchmarks/results/bild_prompt_only_rb4_2026-11-30e.json --markdown benchmarks/BILD_PROMPT_ONLY_RB4_2026-11-30e.md \
  --plot benchmarks/results/bild_prompt_only_rb4_2026-11-30e.png
echo "== done $(date -Is) (exit $?)"
