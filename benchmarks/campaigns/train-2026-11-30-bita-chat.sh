#!/bin/bash
# Session 2026-11-30 (forty-ninth), issue 20, the BiTA target on a CPU: continue the shipped adapter
# (`smollm2-135m-bita`: 11 M SAR tokens of gsm8k, story, code and doc answers on a lent H100) on the committed chat
# data (every `benchmarks/data/self-intents-*` and `steered-*` batch: the target's own answers to self-written
# requests, none of them evaluation prompts), lr 3e-3 cosine, bf16 autocast, resumable. Its held-out split (5 % of
# the mix, every batch in it) selects `best/` as `train bita` does. Then `eval bita` scores the shapes that pay on a
# CPU (1, 2, 3) for the shipped adapter and the candidate on the fixed held-out set (heldout-9900000, never trained
# on; the first 120 of its answers) for the decision.
#   STEPS=N SECONDS_LIMIT=S nohup benchmarks/campaigns/train-2026-11-30-bita-chat.sh > /work/runs/bita-chat.log &
set -uo pipefail
source /work/main/.venv/bin/activate
# jemalloc at its default decay: under dirty_decay_ms:-1 the two-pass step (fiftieth session) grew ~90 MB a step and
# the run was OOM-killed at 24 GB after 95 steps (results/sar_memory_probe_2026-11-30.log)
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
export HF_HUB_OFFLINE=1
M=/work/main OUT=${OUT:-/work/runs/bita-chat} H=/work/runs/heldout-9900000.jsonl
cd $M
echo "== bita chat $(date -Is) $(lscpu | grep 'Model name') commit $(git rev-parse --short HEAD)"
ANSWERS=$(ls benchmarks/data/self-intents-*/answers-*.jsonl.gz benchmarks/data/steered-*/answers-*.jsonl.gz)
sha256sum $ANSWERS | sha256sum | sed 's/^/== answers digest (sha256 of the files sha256s) /'
specdec train bita --init-from smollm2-135m-bita $(printf -- '--answers %s ' $ANSWERS) --output $OUT \
  --steps ${STEPS:-800} --batch-size ${BATCH:-8} --groups 64 --lr ${LR:-3e-3} --warmup 20 --eval-every ${EVAL:-100} \
  --save-every 25 --eval-sequences 64 --bf16 on --resume --time-limit ${SECONDS_LIMIT:-4200} \
  2>&1 | grep -v -E "it/s\]|s/it\]"
[ -n "${NO_EVAL:-}" ] && exit 0
echo "== eval $(date -Is)"
rm -rf /work/runs/bita-eval-shipped /work/runs/bita-eval-candidate  # eval bita writes tree_shape.json beside each
cp -r src/specdec/models/drafts/smollm2-135m-bita /work/runs/bita-eval-shipped
cp -r $OUT/best /work/runs/bita-eval-candidate
specdec eval bita --adapter shipped=/work/runs/bita-eval-shipped --adapter candidate=/work/runs/bita-eval-candidate \
  --answers $H --heldout-fraction 0.99 --skip 0 --sequences ${SEQUENCES:-120} --shapes 1,2,3 \
  --out /work/runs/bita-eval-chat.json --markdown /work/runs/bita-eval-chat.md
echo "== done $(date -Is)"
