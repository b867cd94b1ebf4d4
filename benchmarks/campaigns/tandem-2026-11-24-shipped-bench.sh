#!/bin/bash
# Session 2026-11-24 (tenth): the packaged chat Tandem (commit e441c85: bf16-stored weights, refit router) benched by
# name, as users load it, beside the shipped draft, with and without the router; from a detached worktree of
# e441c85 (/work/bench-tree) so code edited meanwhile in /work/main cannot leak in; nothing else ran on the CPU.
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
echo "== start $(date -Is) $(lscpu | grep 'Model name')"
cd /work/bench-tree && specdec bench --per-task 5 --max-new-tokens 128 \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem+router:smollm2-135m-tandem \
  --out $M/benchmarks/results/specbench_tandem_shipped_2026-11-24.json --markdown $M/benchmarks/TANDEM_SHIPPED_BENCH_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
