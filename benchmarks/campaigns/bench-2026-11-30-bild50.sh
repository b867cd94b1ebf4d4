#!/bin/bash
# Session 2026-11-30 (forty-eighth), issue 20 item 6: the BiLD sweep on 50 CNN/DM articles again (first 300 words,
# 64 new tokens, greedy), with the small models shipped since the GPU leases of 2026-11-27 (the 2026-11-24 sweep ran
# their predecessors), and with prompt lookup in front of a small model (`lookup+`: the article's n-grams propose
# where they match, the small model elsewhere; BiLD's rollback rule judges both). α_FB 0.5 (lookup drafts carry no
# confidence: only the small model's steps fall back), α_RB 2, 3 or 5, against plain decoding and lossless SpS with
# the same drafter, interleaved per article. One run with the CPU to itself, from the worktree at commit $1; the
# files are written there with repository-relative names and copied into main by the caller. jemalloc with its
# default decay (see bench-2026-11-24d-bild50.sh).
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bild sweep"
draft=int8:vocab-2048:smollm2-135m-draft
drafters=$draft,int8:vocab-2048:tandem:smollm2-135m-tandem,lookup+$draft,lookup+int8:eagle3:smollm2-135m-eagle3
specdec bench bild --drafters "$drafters" --fallback 0.5 --rollback 2,3,5 --tandem-gamma "" \
  --articles 50 --per-task 0 --max-new-tokens 64 \
  --out benchmarks/results/bild_sweep_50_2026-11-30.json --markdown benchmarks/BILD_50_2026-11-30.md \
  --plot benchmarks/results/bild_sweep_50_2026-11-30.png
echo "== done $(date -Is) (exit $?)"
