#!/bin/bash
# Session 2026-11-24 (fourteenth), issue 20, a diagnostic: does the EAGLE-3 head's held-out agreement (0.47) reach
# decoding at all, or does something between training and inference lose it? The same bench, on 20 prompts of the
# head's own training distribution instead of Spec-Bench: the user turns of the last 20 answers of the self-intents
# answer file c33433daef7f419f (the tail of primary-intents: held out from training), built by heldout_questions.py
# (committed as benchmarks/results/heldout20_self_intents_questions.jsonl). Never trained on; not evaluation prompts.
# Run from /work/main at 84dc3af with the CPU to itself; results copied into benchmarks/.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
mkdir -p /work/diag && cd /work/diag
python /work/main/benchmarks/campaigns/heldout_questions.py ~/.cache/specdec/answers/answers-c33433daef7f419f.jsonl 20 heldout20.jsonl
specdec bench spec --spec-bench /work/diag/heldout20.jsonl --per-task 20 --max-new-tokens 128 --no-hf --heuristic-for "" \
  --drafters "int8:eagle3:smollm2-135m-eagle3,eagle3:/work/runs/eagle3-chat/best" \
  --out /work/diag/heldout_bench.json --markdown /work/diag/heldout_bench.md
