#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20: VOCAB_COVERAGE_2026-11-27.md found that the 2,048-token draft
# vocabulary every trained drafter proposes from holds the target's greedy token at only 72-75 % of chat and
# Spec-Bench positions (53 % in translation); 8,192 tokens hold 83-87 % (75 %). The draft and the Tandem secondary
# keep a full output head, trimmed only when they draft (`vocab-N:`), so a wider cut is a drafting-time choice:
# this A/B measures it, 30 Spec-Bench prompts (5 per task), our plain as the baseline, every output identical.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main T=${TANDEM:-/work/runs/tandem-gpu3}
echo "== bench $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-4096:smollm2-135m-draft,int8:vocab-8192:smollm2-135m-draft,int8:vocab-2048:tandem:$T,int8:vocab-4096:tandem:$T,int8:vocab-8192:tandem:$T \
  --out $M/benchmarks/results/vocab_ab_2026-11-27.json --markdown $M/benchmarks/VOCAB_AB_2026-11-27.md)
echo "== done $(date -Is) (exit $?)"
