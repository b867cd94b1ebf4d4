#!/bin/bash
# Session 2026-11-30 (forty-eighth), after bench-2026-11-30e-bild-rb4.sh: alpha_RB 4 was picked after seeing the first
# 50 articles at 3, 5 and 8, so it runs again on 100 CNN/DM articles (the 50 more are new to it), prompt-only lookup,
# against plain decoding and lossless SpS with the same lookup. 64 new tokens, greedy. Worktree at commit $1.
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bild rb4 100"
specdec bench bild --drafters prompt-only-lookup --fallback 0.5 --rollback 4 --tandem-gamma "" \
  --articles 100 --per-task 0 --max-new-tokens 64 \
  --out benchmarks/results/bild_rb4_100_2026-11-30f.json --markdown benchmarks/BILD_RB4_100_2026-11-30f.md \
  --plot benchmarks/results/bild_rb4_100_2026-11-30f.png
echo "== done $(date -Is) (exit $?)"
