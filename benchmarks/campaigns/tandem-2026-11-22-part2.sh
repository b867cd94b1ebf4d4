#!/bin/bash
# Continuation of campaign.sh (re-ordered so the router and the evaluations come before Tandem-CE).
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f "output tandem-distil" > /dev/null; do sleep 5; done
STEPS=700
stamp() { echo "== $1 $(date -Is)"; }
COMMON="--cache primary --layers 2 --steps $STEPS --batch-size 8 --eval-every 70 --save-every 70 --eval-sequences 64 --bf16 auto"
stamp draft-distil
specdec train tandem $COMMON --output draft-distil --preset distil --architecture draft --resume
stamp router
specdec train router --tandem tandem-distil/best --cache primary --steps 150 --gamma 5
stamp done
