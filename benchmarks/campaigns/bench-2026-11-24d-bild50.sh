#!/bin/bash
# Session 2026-11-24 (fifteenth), issue 20 item 6: the BiLD sweep on 50 CNN/DM articles (first 300 words, 64 new
# tokens, greedy) with the trained small models (the shipped draft and the Tandem secondary, each int8 with the
# trimmed head as the results page runs them; the EAGLE-3 head in bf16, as behind lookup) and prompt lookup, a 2 x
# 2 (α_FB, α_RB) grid, against plain and lossless SpS with the same small model, interleaved per article. One run
# with the CPU to itself (the background data job paused by the caller), from the worktree at the commit given as
# $1; the files are written there with repository-relative names and copied into main by the caller.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
drafters=int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem,bf16:eagle3:smollm2-135m-eagle3
drafters+=,prompt-lookup
echo "== bild sweep $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench bild --drafters "$drafters" --fallback 0.3,0.6 --rollback 2,5 --tandem-gamma "" \
  --articles 50 --per-task 0 --max-new-tokens 64 \
  --out benchmarks/results/bild_sweep_50_2026-11-24.json --markdown benchmarks/BILD_50_2026-11-24.md \
  --plot benchmarks/results/bild_sweep_50_2026-11-24.png
echo "== done $(date -Is) (exit $?)"
