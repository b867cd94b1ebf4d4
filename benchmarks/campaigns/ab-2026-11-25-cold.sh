#!/bin/bash
# Session 2026-11-25 (eighteenth), issue 21: does dropping each size's first timed call (the commit given as $2)
# keep the adaptive γ drafting in a fresh process at one request, where the commit before it ($1) drafted 16-112
# tokens of 458 in the first round of continuous_batching_rounds_2026-11-25c? bench serving at c = 1, one round
# each, in a fresh process, the before commit from /work/ab-before and the after commit from /work/bench-tree,
# alternated twice. The CPU to itself (the data job paused); jemalloc with its default decay.
set -uo pipefail
while pgrep -f "cb-2026-11-25.sh|rounds-2026-11-25c.sh" > /dev/null; do sleep 20; done
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/ab-before checkout -q --detach "$1"
git -C /work/bench-tree checkout -q --detach "$2"
for n in 1 2; do
  for side in before after; do
    tree=/work/bench-tree; [ $side = before ] && tree=/work/ab-before
    cd $tree
    echo "== $side $n $(date -Is) $(git rev-parse --short HEAD)"
    PYTHONPATH=$tree/src specdec bench serving --concurrency 1 --rounds 1 --cutoff 4:4 \
      --out /work/main/benchmarks/results/ab_cold_2026-11-25_${side}_$n.json \
      --markdown /work/main/benchmarks/results/ab_cold_2026-11-25_${side}_$n.md
  done
done
echo "== done $(date -Is)"
