#!/bin/bash
# Session 2026-12-02 (sixty-third), issue 20: a fifth kind of CPU, a 2-core AMD EPYC of family 25 model 1 (Zen 3:
# AVX2 only, no AVX-512, no bf16 kernels; the demo's plain decoding 10.9 tok/s). Deliverable 6's greedy page on it,
# every method with the drafters shipped now, in one run: HF plain, HF assisted with prompt lookup and with the
# draft, our plain, SpS with the draft (fp32 and int8), lookup + draft, Tandem + SPEED with and without its router,
# BiTA at its shape, the efficient tree and behind lookup, the EAGLE-3 tree alone and behind lookup (the default),
# and BiTA's other two measured shapes (1 and 3: is shape 2, chosen on an AVX-512 EPYC, still this machine's
# best?); plain decoding and the default on the fast engine too (best lossless against HF on an AVX2 CPU, where
# `--compile` is what pays). 30 Spec-Bench prompts x 128 tokens, greedy, fp32 target. From the worktree at a fixed
# commit, the machine to itself:
#   (nohup benchmarks/campaigns/page-zen3-2026-12-02.sh COMMIT > /work/runs/page-zen3.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "zen3 page"
M=/work/main N=page_zen3_2026-12-02 D=smollm2-135m-draft B=smollm2-135m-bita
TREE=int8:tree-2:eagle3:smollm2-135m-eagle3
export HF_HUB_OFFLINE=1
drafters=prompt-lookup,$D,int8:vocab-2048:$D,lookup+int8:vocab-2048:$D
drafters+=,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem+router:smollm2-135m-tandem
drafters+=,bita:$B,bita[efficient]:$B,lookup+bita:$B,bita[1]:$B,bita[3]:$B
drafters+=,$TREE,lookup+$TREE
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --drafters "$drafters" \
  --engine eager,fast --fast-drafters "lookup+$TREE" \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/PAGE_ZEN3_2026-12-02.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is)"
