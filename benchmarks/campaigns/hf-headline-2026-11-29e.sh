#!/bin/bash
# Session 2026-11-29 (forty-sixth), issue 20: hf-headline-2026-11-29d.sh again at 011c87f, whose compiled steps build
# inductor's C++ kernels with the GCC register options (a compiled 5-token verify block 1.51 -> 1.21 one-token steps):
# HF `generate`, our plain decoding and the default drafter, each on the eager and the compiled (fast) engine, in one
# run, 30 Spec-Bench prompts x 128 tokens, greedy, fp32 target, on the faster AMD EPYC. From the worktree
# /work/bench-tree at a fixed commit, the machine to itself.
set -euo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
M=/work/main N=hf_headline_2026-11-29e
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/bench-tree rev-parse --short HEAD)"
cd /work/bench-tree
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine eager,fast \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/HF_HEADLINE_2026-11-29e.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
