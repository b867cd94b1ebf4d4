#!/bin/bash
# Session 2026-11-24 (tenth): ship the chat-continued Tandem secondary (tandem-2026-11-23-chat.sh, best step 1050;
# clean bench 1.09x our plain vs the shipped secondary's 1.02x in TANDEM_CHAT_BENCH_2026-11-24.md). Its router is
# refit to it first (the shipped router was fit to the previous secondary), on the same primary-chat cache, then
# the package replaces smollm2-135m-tandem.
set -euo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== router $(date -Is) $(lscpu | grep 'Model name')"
specdec train router --tandem tandem-chat/best --cache primary-chat --steps 150 --gamma 5
echo "== export $(date -Is)"
cd /work/main
specdec train export --draft /work/runs/tandem-chat/best --name smollm2-135m-tandem \
  --eval-report benchmarks/results/tandem_chat_eval_2026-11-23.json
echo "== done $(date -Is)"
