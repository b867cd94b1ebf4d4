#!/bin/bash
# Session 2026-11-23/24 (ninth): the bench step of tandem-2026-11-23-chat-eval.sh run again with the CPU to itself
# (the first run shared the CPU with test runs and was discarded, not committed); from the detached worktree of
# commit 0dd6c39 (/work/bench-tree), as the first run. The self-intents step was paused (SIGSTOP) meanwhile.
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
M=/work/main
cd /work/bench-tree && specdec bench --per-task 5 --max-new-tokens 128 \
  --drafters int8:vocab-2048:smollm2-135m-draft,int8:vocab-2048:tandem:smollm2-135m-tandem,int8:vocab-2048:tandem:/work/runs/tandem-chat/best \
  --out $M/benchmarks/results/specbench_tandem_chat_2026-11-24.json --markdown $M/benchmarks/TANDEM_CHAT_BENCH_2026-11-24.md
echo "== done $(date -Is) (exit $?)"
