#!/bin/bash
# Session 2026-11-30 (forty-eighth), after bench-2026-11-30e-bild-rb4.sh: alpha_RB 4 was picked after seeing the first
# 50 articles at 3, 5 and 8, so it runs again on 100 CNN/DM articles (the 50 more are new to it), prompt-only lookup,
# against plain decoding and lossless SpS with the same lookup. 64 new tokens, greedy. Worktree at commit $1.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== bild rb4 100 $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench bild --drafters prompt-only-lookup --fallback 0.5 --rollback 4 --tandem-gamma "" \
  --articles 100 --per-task 0 --max-new-tokens 64 \
  --out benchmarks/results/bild_rb4_100_2026-11-30f.json --markdown benchmarks/BILD_RB4_100_2026-11-30f.md \
  --plot benchmarks/results/bild_rb4_100_2026-11-30f.png
echo "== done $(date -Is) (exit $?)"
