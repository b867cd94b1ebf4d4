#!/bin/bash
# Session 2026-12-01 (fifty-ninth), issue 20, on a 2-core AMD EPYC with AVX-512 BF16 (no GPU lent; rerun in the sixtieth on an AMX Xeon): ShareGPT with
# every turn answered by the target, on the CPU (deliverable 2's multi-turn data; the lease script
# data-gpu-2026-12-01-sharegpt.sh is the GPU's way to the same answers, in four shards). All 9,453 conversations,
# round by round (a conversation leaves at the round whose context exceeds 768 tokens), bf16, batch 64, 128 new
# tokens: the settings of data-2026-11-26-sharegpt.sh, so round 1's cache key is that run's. Cached and
# resumable (each round appends batch by batch, chunks of 1,024 sorted by length): rerun to continue; a background
# job paused with SIGSTOP while benchmarks or the suite need the CPU. The answers hold ShareGPT's text as prompt
# token ids: export-answer-ids-2026-12-01.py keeps the target's answer ids only for the commit.
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
S=/work/shared/data/train
[ -f $S/sharegpt/prompts.jsonl.gz ] || { echo "no ../shared ShareGPT file: nothing to answer"; exit 1; }
mkdir -p /work/runs && cd /work/runs
echo "== sharegpt all rounds $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${SHAREGPT_SECONDS:-20000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts conversations:$S/sharegpt/prompts.jsonl.gz --count 9453
rc=$?; echo "== done $(date -Is) (exit $rc)"
