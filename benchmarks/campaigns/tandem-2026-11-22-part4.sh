#!/bin/bash
# Session 2026-11-22b, after campaign3 (Tandem-CE): the identity-projection experiment.
# One cache holding every layer any of the compared secondaries reads (0, 15, 29, 30), same answers in
# the same order (shuffle seed), so batches and held-out tail are those of `primary`.
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f campaign3.sh > /dev/null; do sleep 5; done
stamp() { echo "== $1 $(date -Is)"; }
A=~/.cache/specdec/answers
ANSWERS=$(ls $A/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
stamp primary-all
specdec data primary --dtype bf16 $ANSWERS --output primary-all --max-len 256 --batch-size 16 --hidden-layers 0,15,29,30
stamp primary-text-all
specdec data primary --dtype bf16 --answers text-heldout.jsonl --output primary-text-all --max-len 256 --batch-size 16 --hidden-layers 0,15,29,30
COMMON="--cache primary-all --layers 2 --steps 700 --batch-size 8 --eval-every 70 --save-every 70 --eval-sequences 64 --bf16 auto"
stamp tandem-identity
specdec train tandem $COMMON --output tandem-identity --preset distil --projection-init identity --resume
stamp done
