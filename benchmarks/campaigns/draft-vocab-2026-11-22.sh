#!/bin/bash
# Issue 11, cheap drafts: the 2-layer draft with its full 49k head and trimmed to the target's most
# written 8,192 / 2,048 tokens (draft_vocab.json from `specdec data draft-vocab` over the 4 answers
# files), c and speed in one run on this CPU.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/main
echo "== bench $(date -Is)"
specdec bench --drafters "smollm2-135m-draft,vocab-8192:smollm2-135m-draft,vocab-2048:smollm2-135m-draft" \
  --per-task 1 --out benchmarks/results/specbench_draft_vocab.json --markdown benchmarks/DRAFT_VOCAB_BENCH.md
echo "== done $(date -Is)"
