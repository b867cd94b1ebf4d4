#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20: after train-2026-11-27c-eagle3-vocab.sh, the widened head against
# the shipped one: per source on the CPU caches' held-out tails and on the target's own Spec-Bench answers
# (heldout_eagle3.py; the run trained on the CPU caches, never on their tails or on evaluation prompts), then the
# A/B on the bench (bench-2026-11-27d-vocab-head.sh, 30 prompts). From a detached worktree of the commit under test.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs D=/work/runs/specbench-diag NEW=/work/runs/eagle3-vocab8k/best
while pgrep -f "specdec train eagle3" > /dev/null; do sleep 5; done
echo "== heads $(date -Is) $(lscpu | grep 'Model name')"
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --cache $R/primary-intents4 \
  --cache $R/primary-gpu1 --cache $R/primary-passages1 --cache $R/primary-sharegpt2 \
  --head shipped=src/specdec/models/drafts/smollm2-135m-eagle3 --head vocab8k=$NEW --sequences 32 \
  --out $M/benchmarks/results/heldout_eagle3_2026-11-27d.json --markdown $M/benchmarks/HELDOUT_EAGLE3_2026-11-27d.md)
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --whole \
  $(for t in math_reasoning mt_bench qa rag summarization translation; do echo --cache $D/primary-$t-2048; done) \
  --head shipped=src/specdec/models/drafts/smollm2-135m-eagle3 --head vocab8k=$NEW --sequences 10 \
  --out $M/benchmarks/results/specbench_head_diag_2026-11-27b.json \
  --markdown $M/benchmarks/SPECBENCH_HEAD_DIAG_2026-11-27b.md)
echo "== bench $(date -Is)"
(cd /work/bench-tree && HEAD_DIR=$NEW bash benchmarks/campaigns/bench-2026-11-27d-vocab-head.sh \
  --out $M/benchmarks/results/vocab_head_ab_2026-11-27.json --markdown $M/benchmarks/VOCAB_HEAD_AB_2026-11-27.md)
echo "== done $(date -Is) (exit $?)"
