#!/bin/bash
# Session 2026-11-26 (twentieth), issue 21: plain decoding at 64 concurrent requests and the process's peak memory,
# at three commits given as arguments (before the in-place row moves, with them, with growth limited to the live
# rows' bucket), one fresh process each, in the order given; /usr/bin/time's maximum resident set beside each
# result. The data job is stopped first (its memory would otherwise count against the machine's 23 GB).
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
unset MALLOC_CONF
for commit in "$@"; do
  tree=/work/ab-tree-$commit
  [ -d $tree ] || git -C /work/main worktree add -f --detach $tree $commit > /dev/null || exit 1
  cd $tree
  echo "== $commit $(date -Is)"
  PYTHONPATH=$tree/src /usr/bin/time -f "peak RSS %M KiB, %e s" specdec bench serving --concurrency 64 \
    --requests-per-client 1 --drafters "" \
    --out /work/main/benchmarks/results/ab_c64_memory_$(date +%F)_$commit.json \
    --markdown /work/main/benchmarks/results/ab_c64_memory_$(date +%F)_$commit.md 2>&1 | grep -E "peak RSS|tokens_per_s" \
    | sed -E 's/.*"method": "([^"]*)".*"prefill_s": ([0-9.]+).*"tokens_per_s": ([0-9.]+).*/\1: prefill \2 s, \3 tok\/s/'
done
echo "== done $(date -Is)"
