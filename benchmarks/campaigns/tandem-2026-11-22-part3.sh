#!/bin/bash
# Session 2026-11-22b: Tandem-CE branched from Tandem-Distil's half-way checkpoint (same batches).
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
stamp() { echo "== $1 $(date -Is)"; }
COMMON="--cache primary --layers 2 --steps 700 --batch-size 8 --eval-every 70 --save-every 70 --eval-sequences 64 --bf16 auto"
stamp tandem-ce
specdec train tandem $COMMON --output tandem-ce --preset ce --branch-from tandem-distil/checkpoint-350 --resume
stamp done
