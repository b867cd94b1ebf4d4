#!/bin/bash
# Session 2026-11-30 (forty-eighth), issue 20 item 6, after bench-2026-11-30-bild50.sh: BiLD with prompt lookup in
# front of the shipped draft reached 2.07x plain within a ROUGE-L point on 50 CNN/DM articles at alpha_RB 5. The
# control it lacked: prompt lookup alone under the same rule (is the trained draft doing any of it?), and a looser
# alpha_RB 8, on 100 articles (the first 50 are the earlier run's). Same settings otherwise (first 300 words,
# 64 new tokens, greedy, alpha_FB 0.5, at most 10 small tokens). From the worktree at commit $1, the CPU to itself.
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bild sweep"
specdec bench bild --drafters "prompt-lookup,lookup+int8:vocab-2048:smollm2-135m-draft" --fallback 0.5 --rollback 5,8 \
  --tandem-gamma "" --articles 100 --per-task 0 --max-new-tokens 64 \
  --out benchmarks/results/bild_sweep_100_2026-11-30b.json --markdown benchmarks/BILD_100_2026-11-30b.md \
  --plot benchmarks/results/bild_sweep_100_2026-11-30b.png
echo "== done $(date -Is) (exit $?)"
