#!/bin/bash
# Session 2026-11-27 (twenty-ninth), issue 20: self-written requests steered to the head's weakest Spec-Bench tasks,
# translation (0.84 accepted per chain of 4 on the target's own answers) and summaries (1.10): the settings of
# data-2026-11-26d-self-intents-long.sh (bf16, batch 64, answers and requests of up to 128 tokens) with `--opener`
# in place of the built-in intents. The openers name the instruction forms users type (no evaluation prompt's
# text); what follows each is the target's own. COUNT requests per seed (2,048: ~15 minutes on the 2-core Xeon).
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
mkdir -p /work/runs && cd /work/runs
echo "== translate / summarize requests seed ${SEED:?set SEED} $(date -Is) $(lscpu | grep 'Model name')"
timeout ${SELF_SECONDS:-10000} specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 128 \
  --max-prompt-tokens 768 --prompts self-intents --count "${COUNT:-2048}" --seed "$SEED" --request-tokens 128 \
  --opener "Translate German to English:" --opener "Translate this German sentence into English:" \
  --opener "Translate the following text from German into English:" --opener "Translate into English:" \
  --opener "Translate French to English:" --opener "Translate Spanish to English:" \
  --opener "Summarize:" --opener "Summarize this news article:" --opener "Summarize the following article:" \
  --opener "Write a short summary of this story:" --opener "Give me the key points of this report:" \
  --opener "TL;DR:"
rc=$?; echo "== done $(date -Is) (exit $rc)"
