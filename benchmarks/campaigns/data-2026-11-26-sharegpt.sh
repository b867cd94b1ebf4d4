#!/bin/bash
# Session 2026-11-26 (twentieth), issue 20: ShareGPT's first turns answered by the target (bf16, batch 64, 128 new
# tokens, prompts <= 768 tokens with the chat template), all 9,453 conversations' first turns in chunks of 1,024
# sorted by length within each chunk, so a stopped run holds a prefix that spans every length (the eighth session's
# run held only the 3,776 shortest, and was lost with its machine). Cached and resumable: rerun to continue; a
# background job paused with SIGSTOP while benchmarks or the suite need the CPU. Real user requests: the prompt
# source EAGLE and Medusa trained on; not an evaluation set.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
S=/work/shared/data/train
mkdir -p /work/runs && cd /work/runs
echo "== sharegpt round 1 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${SHAREGPT_SECONDS:-10000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts conversations:$S/sharegpt/prompts.jsonl.gz --count 9453 --rounds 1
rc=$?; echo "== done $(date -Is) (exit $rc)"
