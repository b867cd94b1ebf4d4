#!/bin/bash
# Session 2026-11-29 (forty-fifth), issue 20: the bench A/B of the lr 3e-5 replay head (chain-2026-11-29b-replay.sh;
# HEAD its best checkpoint) against the shipped head, in one run: each alone as a tree (`int8:tree-2:eagle3:`) and
# inside the default drafter (`lookup+int8:tree-2:eagle3:`), our plain decoding the baseline, PER_TASK Spec-Bench
# prompts a task (default 10: 60 prompts, as DEFAULT_CONFIRM_2026-11-27h) x 128 tokens, greedy, fp32 target, eager
# engine. Run with the machine to itself, from the worktree /work/bench-tree at a fixed commit:
#   HEAD=/work/runs/eagle3-replay-k/best benchmarks/campaigns/bench-2026-11-29b-replay-head.sh
set -euo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
H=${HEAD:?the head to compare} M=/work/main TAG=${TAG:-2026-11-29b}
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/bench-tree rev-parse --short HEAD)"
cd /work/bench-tree
specdec bench spec --per-task "${PER_TASK:-10}" --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:smollm2-135m-eagle3,int8:tree-2:eagle3:$H,lookup+int8:tree-2:eagle3:smollm2-135m-eagle3,lookup+int8:tree-2:eagle3:$H" \
  --out $M/benchmarks/results/replay_head_ab_$TAG.json --markdown $M/benchmarks/REPLAY_HEAD_AB_$TAG.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
