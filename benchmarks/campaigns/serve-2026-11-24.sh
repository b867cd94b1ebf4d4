#!/bin/bash
# Session 2026-11-24 (tenth), issue 22: specdec serve under load over HTTP on 127.0.0.1 (a burst of 200 concurrent
# streams, then closed loops at c = 1, 8, 32 with speculation off and on per request, prompt lookup), and the chat
# page's screenshot with the real model. From a detached worktree of the commit under test (/work/bench-tree).
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export PYTHONPATH=/work/bench-tree/src
M=/work/main
echo "== load $(date -Is) $(git -C /work/bench-tree rev-parse --short HEAD) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && specdec bench-server --drafter prompt-lookup --out $M/benchmarks/results/serve_load.json \
  --markdown $M/benchmarks/SERVE_LOAD.md)
echo "== page $(date -Is) (exit $?)"
(cd /work/bench-tree && python benchmarks/serve_page.py --drafter prompt-lookup --out $M/benchmarks/results/serve-page.png)
echo "== done $(date -Is) (exit $?)"
