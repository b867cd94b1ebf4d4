#!/bin/bash
# Session 2026-11-22b: the distilled draft at the Tandem run's wall-clock (1,620 s ≈ 1,050 steps at its 1.55 s/step).
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f campaign6.sh > /dev/null; do sleep 5; done
echo "== draft-distil-1050 $(date -Is)"
specdec train tandem --cache primary-all --layers 2 --steps 1050 --batch-size 8 --eval-every 70 --save-every 70 --eval-sequences 64 --bf16 auto --output draft-distil-1050 --preset distil --architecture draft --resume
echo "== done $(date -Is)"
