#!/bin/bash
# Session 2026-11-25 (nineteenth; first run 2026-11-26, twentieth), issue 21: plain decoding at 64 concurrent requests before ($1) and after ($2)
# departures fill holes from the end and arrivals join spare rows in place (no copy of the whole KV cache per
# departure and per arrival). CONTINUOUS_BATCHING_2026-11-25.md measured 19.1 tok/s where the 2026-11-24 run,
# with jemalloc keeping every page, had 35.8. bench serving, plain only (and its repeat), 64 requests at
# c = 64, one fresh process per side. The CPU to itself (the data job paused); jemalloc with its default decay,
# as the continuous-batching runs.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/ab-before checkout -q --detach "$1" || exit 1
git -C /work/bench-tree checkout -q --detach "$2" || exit 1
for n in ${ROUNDS:-1}; do  # ROUNDS="2": a second round, the sides in the other order
  sides="before after"; [ $((n % 2)) = 0 ] && sides="after before"
  for side in $sides; do
    tree=/work/bench-tree; [ $side = before ] && tree=/work/ab-before
    cd $tree
    echo "== $side $n $(date -Is) $(git rev-parse --short HEAD)"
    PYTHONPATH=$tree/src specdec bench serving --concurrency 64 --requests-per-client 1 --drafters "" \
      --out /work/main/benchmarks/results/ab_c64_$(date +%F)_${side}_$n.json \
      --markdown /work/main/benchmarks/results/ab_c64_$(date +%F)_${side}_$n.md
  done
done
echo "== done $(date -Is)"
