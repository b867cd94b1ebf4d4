#!/bin/bash
# Session 2026-11-27 (twenty-sixth), issue 20: the results page's drafters sampled (temperature 0.8, top-p 0.95,
# seeded per prompt, the coupled rule), 30 Spec-Bench prompts x 128 tokens, our plain decoding as the baseline (HF
# samples with its own random stream, so it has no row here). Every method's text is checked against seeded plain
# decoding (the coupled rule makes them equal). The page's slowest drafters (BiTA's efficient tree, Tandem's router)
# are left out to fit the session. Rerun of bench-2026-11-26d-sampled.sh with the head shipped today
# (4ecfa6a2db6d87c6, continued on a lent H200), the same drafters otherwise: does the default still lead for
# sampled requests? One run with the CPU to itself, from the worktree at the commit given as $1; the files are
# written there with repository-relative names and copied into main by the caller.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2  # default decay: see results_page.sh
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
drafters=prompt-lookup,int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem
drafters+=,bita:smollm2-135m-bita,lookup+bf16:eagle3:smollm2-135m-eagle3,int8:tree-2:eagle3:smollm2-135m-eagle3
echo "== sampled bench $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --temperature 0.8 --top-p 0.95 \
  --verify coupled --drafters "$drafters" \
  --out benchmarks/results/specbench_sampled_2026-11-27.json --markdown benchmarks/SAMPLED_BENCH_2026-11-27.md
rc=$?; echo "== done $(date -Is) (exit $rc)"
