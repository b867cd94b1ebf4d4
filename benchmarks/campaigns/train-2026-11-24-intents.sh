#!/bin/bash
# Session 2026-11-24 (twelfth), issue 20, after primary-2026-11-24-intents.sh: the shipped draft (311bb5aeb517274c)
# and the shipped Tandem secondary (9f299c2dcf6ead52), both trained on primary-chat (ShareGPT first turns), each
# continued from its shipped weights on the self-intents cache (new answers: 7,765 requests, 0.75 M answer tokens)
# at equal sequences seen (480 x 24 = 1,440 x 8 = 11,520, ~1.6 passes over the training part), then every model
# scored on the cache's held-out tail (answers none of them trained on) in one eval run. Resumable (--resume).
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f primary-2026-11-24-intents.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== draft-intents $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${DRAFT_SECONDS:-2400} specdec train tandem --architecture draft --preset distil --cache primary-intents \
  --init-from smollm2-135m-draft --steps 480 --batch-size 24 --warmup 20 --eval-every 60 --save-every 60 \
  --eval-sequences 64 --bf16 auto --output draft-intents --resume
echo "== tandem-intents $(date -Is) (exit $?)"
timeout ${TANDEM_SECONDS:-3600} specdec train tandem --architecture tandem --preset distil --cache primary-intents \
  --init-from smollm2-135m-tandem --steps 1440 --batch-size 8 --warmup 50 --eval-every 180 --save-every 180 \
  --eval-sequences 64 --bf16 auto --output tandem-intents --resume
echo "== eval $(date -Is) (exit $?)"
cd /work/main
specdec eval tandem --model draft-shipped=$HOME/.cache/specdec/smollm2-135m-draft \
  --model draft-intents=/work/runs/draft-intents/best --model tandem-shipped=$HOME/.cache/specdec/smollm2-135m-tandem \
  --model tandem-intents=/work/runs/tandem-intents/best --cache intents=/work/runs/primary-intents \
  --run draft=/work/runs/draft-intents --run tandem=/work/runs/tandem-intents \
  --out benchmarks/results/intents_eval_2026-11-24.json --markdown benchmarks/INTENTS_EVAL_2026-11-24.md \
  --plot benchmarks/results/intents_budget_2026-11-24.png
echo "== done $(date -Is) (exit $?)"
