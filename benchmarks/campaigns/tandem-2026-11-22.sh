#!/bin/bash
# Tandem campaign, session of 2026-11-22 (AMD EPYC, 2 cores, avx512_bf16). Each step resumes if rerun.
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
A=~/.cache/specdec/answers
ANSWERS=$(ls $A/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
S=/work/shared/data/train
STEPS=${STEPS:-700}
stamp() { echo "== $1 $(date -Is)"; }
stamp primary
specdec data primary --dtype bf16 $ANSWERS --output primary --max-len 256 --batch-size 16
stamp text
[ -f text-heldout.jsonl ] || specdec data text --source $S/gutenberg_en/test.jsonl.gz --count 128 --tokens 256 --output text-heldout.jsonl
specdec data primary --dtype bf16 --answers text-heldout.jsonl --output primary-text --max-len 256 --batch-size 16
COMMON="--cache primary --layers 2 --steps $STEPS --batch-size 8 --eval-every 70 --save-every 70 --eval-sequences 64 --bf16 auto"
stamp tandem-distil
specdec train tandem $COMMON --output tandem-distil --preset distil --resume
stamp draft-distil
specdec train tandem $COMMON --output draft-distil --preset distil --architecture draft --resume
stamp tandem-ce
specdec train tandem $COMMON --output tandem-ce --preset ce --branch-from tandem-distil/checkpoint-$((STEPS / 2)) --resume
stamp router
specdec train router --tandem tandem-distil/best --cache primary --steps 300 --gamma 5
stamp done
