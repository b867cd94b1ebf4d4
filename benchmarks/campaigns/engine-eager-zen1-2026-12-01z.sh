#!/bin/bash
# Session 2026-12-01 (fifty-sixth), issue 20: the eager engine after `Engine.extend` was split into
# `BlockLayout._place` and `engine/forward.py` (5bb0056, behaviour unchanged), against HF in the same run, on the
# AVX2-only EPYC of family 23: the settings of `engine-zen1-2026-11-30v.sh` less its compiled row (eager 1.07x HF
# there, 12.3 against 11.5 tok/s).
#   (nohup benchmarks/campaigns/engine-eager-zen1-2026-12-01z.sh COMMIT > /work/runs/engine-eager.log 2>&1 &)
set -euo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "eager engine speed"
M=/work/main N=engine_speed_eager_zen1_2026-12-01z
specdec bench engine --shapes smollm2-135m --engines eager --new-tokens 32 --repeats 5 \
  --out $M/benchmarks/results/$N.json --markdown $M/benchmarks/ENGINE_SPEED_EAGER_ZEN1_2026-12-01z.md
echo "== done $(date -Is)"
