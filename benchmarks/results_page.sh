#!/bin/bash
# The current results page: every lossless method with the shipped drafters, one `specdec bench` run
# (30 Spec-Bench prompts x 128 tokens, greedy, fp32 target, CPU), written to a dated raw JSON and to
# benchmarks/RESULTS.md, the page the README's method table is taken from. Run it with the machine to
# itself (nothing else on the CPU: a training job must be paused), from the repository root:
#   benchmarks/results_page.sh
# Plain decoding and the EAGLE-3 head's two tree rows run on the fast engine too (`--compile`: compiled steps),
# beside the eager rows. Needs ../shared (the Spec-Bench prompts). About an hour on a 2-core CPU.
set -euo pipefail
# jemalloc with its default decay: keeping every page (training's MALLOC_CONF=dirty_decay_ms:-1) grew until memory
# ran out in a 50-article BiLD sweep whose shapes change prompt after prompt (docs/training.md); the
# 2026-11-24_1831 page ran with it.
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
D=smollm2-135m-draft
drafters=prompt-lookup,$D,int8:vocab-2048:$D,lookup+int8:vocab-2048:$D
drafters+=,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem+router:smollm2-135m-tandem
drafters+=,bita:smollm2-135m-bita,bita[efficient]:smollm2-135m-bita,lookup+bita:smollm2-135m-bita
TREE=int8:tree-2:eagle3:smollm2-135m-eagle3
drafters+=,$TREE,lookup+$TREE
drafters+=,lookup+bf16:eagle3:smollm2-135m-eagle3
# EXTRA_DRAFTERS: candidates measured beside the shipped ones in the same run (e.g. a head not yet shipped)
drafters+=${EXTRA_DRAFTERS:+,$EXTRA_DRAFTERS}
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --drafters "$drafters" \
  --engine eager,fast --fast-drafters "$TREE,lookup+$TREE" \
  --out "benchmarks/results/results_page_$(date -u +%Y-%m-%d_%H%M).json" \
  --markdown benchmarks/RESULTS.md --overwrite "$@"
