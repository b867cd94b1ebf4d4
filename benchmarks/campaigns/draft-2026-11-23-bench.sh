#!/bin/bash
# Session 2026-11-23: after campaign8, bench the continued draft against the shipped one and its own
# step-980 parent (int8, head trimmed to the shipped draft's 2,048-token vocabulary), one run.
set -euo pipefail
source /work/main/.venv/bin/activate
while pgrep -f campaign8.sh > /dev/null; do sleep 5; done
V=/work/main/src/specdec/models/drafts/smollm2-135m-draft/draft_vocab.json
for d in draft-distil-1050/best draft-distil-long/best; do cp $V /work/runs/$d/; done
cd /work/main
echo "== bench $(date -Is)"
specdec bench --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:/work/runs/draft-distil-1050/best,int8:vocab-2048:/work/runs/draft-distil-long/best \
  --heuristic-for "" --per-task 4 --out benchmarks/results/specbench_trained_draft.json --markdown benchmarks/TRAINED_DRAFT_BENCH.md
echo "== done $(date -Is)"
