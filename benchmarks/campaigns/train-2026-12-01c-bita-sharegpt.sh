#!/bin/bash
# Session 2026-12-01 (fifty-ninth), issue 20, on a 2-core AMD EPYC with AVX-512 BF16: is the BiTA adapter's
# plateau the data's? The fifty-third session continued the shipped adapter on the committed self-written chat
# batches with a fresh schedule (lr 1e-3): +0.007 accepted tokens a step on the fixed held-out chat set by ~0.45 M
# SAR tokens, then flat (BITA_CHAT2_EVAL_2026-11-30s.md). Here the same continuation on data it has never seen:
# ShareGPT's real requests with every turn answered by the target (data-2026-12-01b-sharegpt-cpu.sh's round files,
# given as ANSWER_FILES, cache files of ~/.cache/specdec/answers), same lr, batch, groups and length, then the
# same `eval bita` of shipped against candidate on the fixed held-out set (heldout-9900000, never trained on).
#   ANSWER_FILES="..." STEPS=N SECONDS_LIMIT=S nohup benchmarks/campaigns/train-2026-12-01c-bita-sharegpt.sh \
#     > /work/runs/bita-sharegpt.log 2>&1 &
set -uo pipefail
source /work/main/.venv/bin/activate
# jemalloc at its default decay (dirty_decay_ms:-1 made the two-pass step grow until the OOM killer: 2026-11-30)
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
export HF_HUB_OFFLINE=1
M=/work/main OUT=${OUT:-/work/runs/bita-sharegpt} H=$M/benchmarks/data/heldout-9900000/answers-*.jsonl.gz
cd $M
echo "== bita sharegpt $(date -Is) $(lscpu | grep 'Model name') commit $(git rev-parse --short HEAD)"
ANSWERS=${ANSWER_FILES:?the ShareGPT round cache files}
sha256sum $ANSWERS | sed 's/^/== /'; sha256sum $ANSWERS | sha256sum | sed 's/^/== answers digest (sha256 of the files sha256s) /'
specdec train bita --init-from smollm2-135m-bita $(printf -- '--answers %s ' $ANSWERS) --output $OUT \
  --steps ${STEPS:-600} --batch-size 8 --groups 64 --lr ${LR:-1e-3} --warmup 20 --eval-every ${EVAL:-100} \
  --save-every 25 --eval-sequences 64 --bf16 on --resume --time-limit ${SECONDS_LIMIT:-2700} \
  2>&1 | grep -v -E "it/s\]|s/it\]"
[ -n "${NO_EVAL:-}" ] && exit 0
echo "== eval $(date -Is)"
rm -rf /work/runs/bita-eval-shipped /work/runs/bita-eval-candidate  # eval bita writes tree_shape.json beside each
cp -r src/specdec/models/drafts/smollm2-135m-bita /work/runs/bita-eval-shipped
cp -r $OUT/best /work/runs/bita-eval-candidate
specdec eval bita --adapter shipped=/work/runs/bita-eval-shipped --adapter candidate=/work/runs/bita-eval-candidate \
  --answers $H --heldout-fraction 0.99 --skip 0 --sequences ${SEQUENCES:-120} --shapes 1,2,3 \
  --out /work/runs/bita-eval-sharegpt.json --markdown /work/runs/bita-eval-sharegpt.md
echo "== done $(date -Is)"
