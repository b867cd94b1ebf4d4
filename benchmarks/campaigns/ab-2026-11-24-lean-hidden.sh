#!/bin/bash
# Session 2026-11-24 (sixteenth): the lean forward for verify passes that return hidden states (b070314)
# against the tree before it (9c3f7da), A/B in interleaved rounds: plain, lookup+bf16:eagle3 and Tandem + SPEED
# (int8 secondary), γ 4, at batch 1 and 8, 64 new tokens, greedy. The CPU to itself (the caller pauses the
# background data job); jemalloc with its default decay. Trees: /work/ab-before and /work/bench-tree.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/ab-before checkout -q --detach 9c3f7da
git -C /work/bench-tree checkout -q --detach b070314
echo "== A/B $(date -Is) $(lscpu | grep 'Model name')"
python /work/main/benchmarks/generate_ab.py --tree before=/work/ab-before --tree after=/work/bench-tree \
  --rounds 3 --per-task 3 --max-new-tokens 64 --batches 1 8 --gamma 4 \
  --drafters lookup+bf16:eagle3:smollm2-135m-eagle3,int8:vocab-2048:tandem:smollm2-135m-tandem \
  --out /work/main/benchmarks/results/generate_ab_lean_hidden_2026-11-24.json \
  --markdown /work/main/benchmarks/GENERATE_AB_LEAN_HIDDEN_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
