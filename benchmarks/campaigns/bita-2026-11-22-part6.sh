#!/bin/bash
# Session 2026-11-22b, after campaign5 (BiTA training): tree shapes on this machine, then the bench.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f campaign5.sh > /dev/null; do sleep 5; done
stamp() { echo "== $1 $(date -Is)"; }
A=~/.cache/specdec/answers
ANSWERS=$(ls $A/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
cd /work/main
stamp eval-bita
specdec eval-bita --adapter deep=/work/runs/bita/best $ANSWERS --sequences 64 --groups 32 \
  --out benchmarks/results/bita_eval.json --markdown benchmarks/BITA.md
stamp bench
B=/work/runs/bita/best
specdec bench --drafters "bita[straight]:$B,bita:$B,bita[full-2]:$B,bita[auto]:$B,prompt-lookup,/work/runs/draft-distil/best,tandem:smollm2-135m-tandem,tandem+router:smollm2-135m-tandem" --heuristic-for none \
  --per-task 1 --out benchmarks/results/specbench_bita.json --markdown benchmarks/BITA_BENCH.md
stamp done
