#!/bin/bash
# Session 2026-11-25 (nineteenth), issue 21: do probes that are asked again after an empty proposal (the commit
# given as $2) keep the adaptive γ drafting in a fresh process at one request, where the commit before ($1)
# stayed plain in about one fresh run of three or four (a trace showed empty lookup probes doubling the wait)?
# bench serving at c = 1, one round each, in a fresh process, before from /work/ab-before and after from
# /work/bench-tree, alternated three times. The CPU to itself (the data job paused); jemalloc, default decay.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
pkill -STOP -f "data answers"
trap 'pkill -CONT -f "data answers"' EXIT
git -C /work/ab-before checkout -q --detach "$1" || exit 1
git -C /work/bench-tree checkout -q --detach "$2" || exit 1
for n in 1 2 3; do
  for side in before after; do
    tree=/work/bench-tree; [ $side = before ] && tree=/work/ab-before
    cd $tree
    echo "== $side $n $(date -Is) $(git rev-parse --short HEAD)"
    PYTHONPATH=$tree/src specdec bench serving --concurrency 1 --rounds 1 --cutoff 4:4 \
      --out /work/main/benchmarks/results/ab_probes_2026-11-25_${side}_$n.json \
      --markdown /work/main/benchmarks/results/ab_probes_2026-11-25_${side}_$n.md
  done
done
echo "== done $(date -Is)"
