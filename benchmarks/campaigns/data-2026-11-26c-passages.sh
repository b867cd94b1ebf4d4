#!/bin/bash
# Session 2026-11-26 (twenty-third), issue 20: RAG- and summary-length requests over the training corpora
# (Gutenberg's train books and the Python docs: never the evaluation sets), answered by the target, then
# their primary cache. The EAGLE-3 head guesses ~0.15 of RAG and summary tokens against ~0.35 of chat ones;
# its caches so far were chat at most 256 tokens long, cut from the left, so it never saw an answer that copies
# from a passage hundreds of tokens back. 2,400-character passages (~550 tokens) with a question after them
# (passage-question) or a summary request before them, 500 per source; primary cache at max-len 896 (whole
# sequences), the other caches' settings otherwise. Cached and resumable: rerun to continue.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f primary-2026-11-26c.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
T=/work/shared/data/train
echo "== passages $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
specdec data answers --dtype bf16 --batch-size 32 --max-new-tokens 128 --max-prompt-tokens 768 \
  --snippet-chars 2400 --count 500 \
  --prompts passage-question:$T/gutenberg_en/train.jsonl.gz --prompts summarize:$T/gutenberg_en/train.jsonl.gz \
  --prompts passage-question:$T/python_docs/python3.11-doc_3.11.2-6+deb12u9_rst_sources.jsonl.gz \
  --prompts summarize:$T/python_docs/python3.11-doc_3.11.2-6+deb12u9_rst_sources.jsonl.gz | tee passages-answers.out
rc=$?; echo "== answers done $(date -Is) (exit $rc)"
answers=$(grep -o '/[^ ]*answers-[0-9a-f]*\.jsonl' passages-answers.out | head -1)
specdec data primary --dtype bf16 --answers "$answers" --output primary-passages1 --max-len 896 --batch-size 8 \
  --hidden-layers 0,2,15,27,29
rc=$?; echo "== primary done $(date -Is) (exit $rc)"
