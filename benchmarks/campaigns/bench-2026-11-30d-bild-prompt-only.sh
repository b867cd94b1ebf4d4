#!/bin/bash
# Session 2026-11-30 (forty-eighth), after bench-2026-11-30c-bild-chat.sh: BiLD with prompt lookup looped on chat
# (17 of 30 Spec-Bench answers at alpha_RB 5 with over 10 % repeated 4-grams, 6 with plain decoding; on CNN/DM 18 of
# 100 against 5): lookup into the answer itself offered its own phrases again. The same grid with
# `prompt-only-lookup` (copies from the prompt alone) beside `prompt-lookup`: alpha_RB 3, 5, 8 on the first 50
# CNN/DM articles and 5 Spec-Bench prompts a task, 64 new tokens, greedy. Worktree at commit $1.
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bild prompt-only"
specdec bench bild --drafters prompt-only-lookup,prompt-lookup --fallback 0.5 --rollback 3,5,8 --tandem-gamma "" \
  --articles 50 --per-task 5 --max-new-tokens 64 \
  --out benchmarks/results/bild_prompt_only_2026-11-30d.json --markdown benchmarks/BILD_PROMPT_ONLY_2026-11-30d.md \
  --plot benchmarks/results/bild_prompt_only_2026-11-30d.png
echo "== done $(date -Is) (exit $?)"
