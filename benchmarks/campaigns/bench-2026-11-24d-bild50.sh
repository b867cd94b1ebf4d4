#!/bin/bash
# Session 2026-11-24 (fifteenth), issue 20 item 6: the BiLD sweep on 50 CNN/DM articles (first 300 words, 64 new
# tokens, greedy) with the trained small models as the results page runs them (the shipped draft and the Tandem
# secondary, each int8 with the trimmed head), α_FB 0.5 and α_RB 2 or 5, against plain decoding and lossless SpS
# with the same small model, interleaved per article. One run with the CPU to itself, from the worktree at the
# commit given as $1; the files are written there with repository-relative names and copied into main by the caller.
# jemalloc with its default decay: `dirty_decay_ms:-1` (never hand pages back, right for training's fixed shapes)
# grew this sweep's memory with every new article length until it failed at article ~43 of a first attempt (with 19
# methods: 24 GB, "cpu has ~0 GiB free"); probed on articles 38-42, it grew 1.7 -> 2.3 GB there, and 1.7 -> 1.8 GB
# with the default decay at the same speed per call.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
drafters=int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem
echo "== bild sweep $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench bild --drafters "$drafters" --fallback 0.5 --rollback 2,5 --tandem-gamma "" \
  --articles 50 --per-task 0 --max-new-tokens 64 \
  --out benchmarks/results/bild_sweep_50_2026-11-24.json --markdown benchmarks/BILD_50_2026-11-24.md \
  --plot benchmarks/results/bild_sweep_50_2026-11-24.png
echo "== done $(date -Is) (exit $?)"
