#!/bin/bash
# Session 2026-11-24 (sixteenth), issue 22: the load test with the default drafter of generate
# (lookup+bf16:eagle3:smollm2-135m-eagle3, bench server's default now) instead of prompt lookup: a drafter
# that costs something per token, so c = 32 tests whether the adaptive γ switches it off in time, and c = 1
# compares the server's speedup with the library's on a drafter that gains more than noise. Three rounds of
# plain, speculative, plain again per concurrency. From the worktree at the commit given as $1, the CPU to
# itself (the caller pauses the background data job with SIGSTOP); jemalloc with its default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
git -C /work/bench-tree checkout -q --detach "$1"
cd /work/bench-tree
export PYTHONPATH=/work/bench-tree/src
echo "== serve load $(date -Is) $(lscpu | grep 'Model name') commit $1"
specdec bench server --concurrency 1 8 16 32 --rounds 3 \
  --out benchmarks/results/serve_load_2026-11-24d.json --markdown benchmarks/SERVE_LOAD_2026-11-24d.md
echo "== done $(date -Is) (exit $?)"
