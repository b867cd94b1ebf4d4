#!/bin/bash
# Session 2026-11-29 (forty-fifth), issue 20: the HF headline on the faster AMD EPYC (AVX-512 BF16, a one-token step
# ~20 ms; the results page's EPYC took ~48): HF `generate`, our plain decoding and the default drafter, each on the
# eager and the compiled (fast) engine, in one run, 30 Spec-Bench prompts x 128 tokens, greedy, fp32 target, as
# hf-headline-fast-2026-11-29c.sh with both engines. From the worktree /work/bench-tree at a fixed commit, the
# machine to itself.
set -euo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
M=/work/main N=hf_headline_2026-11-29d
echo "== bench $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/bench-tree rev-parse --short HEAD)"
cd /work/bench-tree
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine eager,fast \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/HF_HEADLINE_2026-11-29d.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
