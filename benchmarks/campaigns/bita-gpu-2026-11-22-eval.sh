#!/bin/bash
# After the GPU runs (bita-gpu-2026-11-22.sh + the two lr 1e-2 runs): Table 3 / Table 4 on this CPU.
# Held-out answers 0..127 selected the checkpoints during training (--eval-sequences 128): skip them.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/main
R=/work/runs/bita-gpu
A=~/.cache/specdec/answers
ANSWERS=$(ls $A/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
echo "== eval-bita $(date -Is)"
specdec eval-bita --adapter "deep=$R/deep-lr1e-2/best" --adapter "shallow=$R/shallow/best" \
  --adapter "none=$R/none/best" --adapter "none-lr1e-2=$R/none-lr1e-2/best" \
  --adapter "deep-lr3e-2=$R/deep/best" $ANSWERS --skip 128 --sequences 80 --groups 32 \
  --out benchmarks/results/bita_eval.json --markdown benchmarks/BITA.md
echo "== done $(date -Is)"
