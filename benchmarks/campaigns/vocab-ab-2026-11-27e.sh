#!/bin/bash
# Session 2026-11-27 (twenty-eighth), issue 20: the draft's vocabulary again. VOCAB_AB_2026-11-27 found the draft
# insensitive to its cut (vocab-2048 -> vocab-8192 of the first campaign's ranking moved α by 0.01) when it agreed
# with the target 33 % of the time; the draft shipped this session agrees 43-46 % held out and gained only 0.02 of
# α on the bench. Here the shipped draft with its own ranking (first campaign: GSM8K, story, code) against a copy
# of it whose draft_vocab.json is the chat ranking (8.05 M tokens of GPU-written chat answers, /work/runs/vocab-chat,
# VOCAB_COVERAGE_2026-11-27b.md) cut at 2,048 and 8,192; int8; 30 Spec-Bench prompts (5 per task), our plain as
# the baseline, every output identical. From a detached worktree of the commit under test.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main C=/work/runs/draft-chatvocab
mkdir -p $C && cp $M/src/specdec/models/drafts/smollm2-135m-draft/{config.json,draft.safetensors,specdec_draft.json} $C/
cp /work/runs/vocab-chat/draft_vocab.json $C/
echo "== bench $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:$C,int8:vocab-8192:$C \
  --out $M/benchmarks/results/vocab_ab_2026-11-27e.json --markdown $M/benchmarks/VOCAB_AB_2026-11-27e.md)
echo "== done $(date -Is) (exit $?)"
