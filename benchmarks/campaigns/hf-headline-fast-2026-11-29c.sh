#!/bin/bash
# The compiled-engine HF headline again after the forty-third session's cuts (Int8Linear: fbgemm called directly; the
# head's catch-up computing logits at its last pair only): the same command as hf-headline-fast-2026-11-29.sh,
# at HEAD of that session (see the commit adding this script), new result names.
cd /work/bench-new
export PYTHONPATH=/work/bench-new/src PATH=/work/main/.venv/bin:$PATH LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
N=hf_headline_2026-11-29c_fast
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine fast \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out benchmarks/results/$N.json --markdown benchmarks/HF_HEADLINE_2026-11-29c_fast.md
cp benchmarks/results/$N.json benchmarks/HF_HEADLINE_2026-11-29c_fast.md /work/runs/
