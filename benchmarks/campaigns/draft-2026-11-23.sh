#!/bin/bash
# Session 2026-11-23 (AMD EPYC, 2 cores, AVX-512 BF16, no AMX, no GPU): continue the distilled 2-layer
# draft from draft-distil-1050's step 980 (1,576,127 answer tokens) on the same primary cache, λ = 0.5
# KD + CE throughout (steps 980..1960 are the distil preset's second half), batch 24 instead of 8.
# Run as: steps 981-1050 with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 in place of the jemalloc line (3.7 s/step),
# then restarted from checkpoint-1050 as below (2.2 s/step); the first start, under plain glibc, ran ~8 s/step.
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
echo "== draft-distil-long $(date -Is) $(lscpu | grep 'Model name')"
MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 specdec train tandem --cache primary-all --layers 2 --steps 1960 --batch-size 24 --eval-every 70 --save-every 70 \
  --eval-sequences 64 --bf16 auto --output draft-distil-long --preset distil --architecture draft \
  --branch-from draft-distil-1050/checkpoint-980 --resume
echo "== done $(date -Is)"
