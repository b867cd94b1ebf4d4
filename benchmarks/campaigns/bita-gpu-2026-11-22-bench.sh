#!/bin/bash
# After the eval: BiTA (the shipped GPU-trained deep adapter, four shapes; shallow and none at the shape
# eval-bita chose) beside plain decoding, prompt lookup and Tandem + SPEED, one run, this CPU.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/main
R=/work/runs/bita-gpu
echo "== bench $(date -Is)"
specdec bench --drafters "bita[straight]:smollm2-135m-bita,bita[auto]:smollm2-135m-bita,bita:smollm2-135m-bita,bita[full-2]:smollm2-135m-bita,bita[auto]:$R/shallow/best,bita[auto]:$R/none/best,prompt-lookup,tandem:smollm2-135m-tandem" \
  --heuristic-for none --per-task 2 --out benchmarks/results/specbench_bita.json --markdown benchmarks/BITA_BENCH.md
echo "== done $(date -Is)"
