#!/bin/bash
# Session 2026-11-27 (twenty-ninth), issue 20: the router of the lease's Tandem secondary (rebuilt as the drafters
# load it: /work/runs/tandem-gpu5), with the shipped router's settings (150 steps, γ 5). The CPU cache it was fit on
# before (primary-intents2: three CPU self-intents batches) did not survive the change of machine; this one holds
# the first 3,000 answers of the committed self-intents-300000 batch (the answers file is in length-sorted chunks
# of 1,024, so its first 3,000 span every length), cached with the secondary's layers.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
R=/work/runs
mkdir -p $R/router-data && cd $R
A=$R/router-data/self-intents-300000-first3000.answers.jsonl
[ -f $A ] || gunzip -c /work/main/benchmarks/data/self-intents-300000/answers-*.jsonl.gz | head -3000 > $A
echo "== router cache $(date -Is) $(sha256sum $A | cut -c1-16)"
[ -f $R/primary-router3000/meta.json ] || specdec data primary --answers $A --output $R/primary-router3000 \
  --max-len 256 --batch-size 16 --dtype bf16 --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== router $(date -Is)"
specdec train router --tandem $R/tandem-gpu5 --cache $R/primary-router3000 --steps 150 --gamma 5 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is) (exit $?)"
