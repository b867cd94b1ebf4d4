#!/bin/bash
# Session 2026-11-28 (thirty-eighth), CAMPAIGN next run 5 (the EAGLE-3 head under load): the head reading its
# key/value heads in place ($2: bf51f60) against repeat_kv's copy per query head ($1: 5c19520), served with the
# default drafter (`specdec bench server --drafter lookup+int8:tree-2:eagle3:`, 16 clients, its own off/server
# rounds, a burst of 20 streams checked against each request alone), old, new, old, new, each from its own
# worktree, the CPU to itself. Records to results/head_attention_serve_ab_2026-11-28_{old,new}_r{1,2}.json,
# pages to /work/runs.
#   benchmarks/campaigns/head-attention-serve-ab-2026-11-28.sh OLD NEW
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
R=/work/main/benchmarks/results
source "$(dirname "$0")/ab-worktrees-common.sh"
ab_worktrees "$1" "$2"
for round in 1 2; do
  for tree in old new; do
    ab_banner $tree $round
    (cd /work/bench-$tree && PYTHONPATH=/work/bench-$tree/src specdec bench server \
      --drafter lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 --concurrency 16 --rounds 2 --streams 20 \
      --out $R/head_attention_serve_ab_2026-11-28_${tree}_r$round.json \
      --markdown /work/runs/head_attention_serve_ab_${tree}_r$round.md)
    echo "== exit $? $(date -Is)"
  done
done
