#!/bin/bash
# Session 2026-11-24 (twelfth), issue 20 (and 23's EAGLE-3 head), after primary-2026-11-24-intents.sh: three drafters
# trained on the self-intents cache (new answers: 7,765 requests, 0.75 M answer tokens; held-out tail never trained
# on) at equal sequences seen, 5,760 each (~0.8 passes over the training part): the shipped draft (311bb5aeb517274c)
# continued (240 x 24), the shipped Tandem secondary (9f299c2dcf6ead52) continued (720 x 8), and a new EAGLE-3 head
# (360 x 16, training-time test 4 deep, 2,048-token draft vocabulary). Then draft and Tandem scored on the tail
# (eval tandem); the head's held-out numbers are in its own log. Resumable (--resume): rerun to continue.
set -uo pipefail
source /work/main/.venv/bin/activate
cd /work/runs
while pgrep -f primary-2026-11-24-intents.sh > /dev/null; do sleep 10; done
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== draft-intents $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
timeout ${DRAFT_SECONDS:-1500} specdec train tandem --architecture draft --preset distil --cache primary-intents \
  --init-from smollm2-135m-draft --steps 240 --batch-size 24 --warmup 20 --eval-every 40 --save-every 40 \
  --eval-sequences 64 --bf16 auto --output draft-intents --resume
echo "== tandem-intents $(date -Is) (exit $?)"
timeout ${TANDEM_SECONDS:-2100} specdec train tandem --architecture tandem --preset distil --cache primary-intents \
  --init-from smollm2-135m-tandem --steps 720 --batch-size 8 --warmup 50 --eval-every 120 --save-every 120 \
  --eval-sequences 64 --bf16 auto --output tandem-intents --resume
echo "== eagle3-intents $(date -Is) (exit $?)"
timeout ${EAGLE_SECONDS:-2700} specdec train eagle3 --cache primary-intents --steps 360 --batch-size 16 --ttt-steps 4 \
  --warmup 20 --eval-every 40 --save-every 40 --eval-sequences 64 --bf16 auto --output eagle3-intents --resume
echo "== eval $(date -Is) (exit $?)"
cd /work/main
specdec eval tandem --model draft-shipped=$HOME/.cache/specdec/smollm2-135m-draft \
  --model draft-intents=/work/runs/draft-intents/best --model tandem-shipped=$HOME/.cache/specdec/smollm2-135m-tandem \
  --model tandem-intents=/work/runs/tandem-intents/best --cache intents=/work/runs/primary-intents \
  --run draft=/work/runs/draft-intents --run tandem=/work/runs/tandem-intents \
  --out benchmarks/results/intents_eval_2026-11-24.json --markdown benchmarks/INTENTS_EVAL_2026-11-24.md \
  --plot benchmarks/results/intents_budget_2026-11-24.png
echo "== done $(date -Is) (exit $?)"
