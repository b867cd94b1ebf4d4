#!/bin/bash
# Session 2026-11-22b, after campaign4: Table 1 with four models, then the first BiTA campaign and its bench.
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f campaign4.sh > /dev/null; do sleep 5; done
stamp() { echo "== $1 $(date -Is)"; }
stamp eval-tandem
cd /work/main
specdec eval-tandem --model tandem-distil=/work/runs/tandem-distil/best --model tandem-ce=/work/runs/tandem-ce/best \
  --model tandem-identity=/work/runs/tandem-identity/best --model draft-distil=/work/runs/draft-distil/best \
  --cache answers=/work/runs/primary-all --heldout-cache text=/work/runs/primary-text-all \
  --run tandem-distil=/work/runs/tandem-distil --run tandem-ce=/work/runs/tandem-ce \
  --run tandem-identity=/work/runs/tandem-identity --run draft-distil=/work/runs/draft-distil \
  --sequences 96 --out benchmarks/results/tandem_eval.json --markdown benchmarks/TANDEM.md --plot benchmarks/results/tandem_budget.png || echo "== eval-tandem FAILED"
cd /work/runs
stamp router-identity
specdec train router --tandem tandem-identity/best --cache primary-all --steps 150 --gamma 5 || echo "== router FAILED"
stamp bita
A=~/.cache/specdec/answers
ANSWERS=$(ls $A/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
specdec train bita $ANSWERS --output bita --steps 150 --batch-size 8 --groups 64 --eval-every 25 --save-every 25 --eval-sequences 32 --resume
stamp done
