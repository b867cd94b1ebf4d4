#!/bin/bash
# sampled-fast-2026-11-29.sh again after ec11315 (top-p sorts only the tokens near the top; truncated
# distributions drawn from their entries): the default drafter sampled (T 0.8, top-p 0.95, the coupled rule)
# on the compiled engine against compiled plain decoding with the same seeds; at 5c4dcf9 (ec11315 + the
# probe) from /work/bench-new.
cd /work/bench-new
export PYTHONPATH=/work/bench-new/src PATH=/work/main/.venv/bin:$PATH LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
N=sampled_fast_2026-11-29b
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine fast --no-hf \
  --temperature 0.8 --top-p 0.95 --verify coupled \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out benchmarks/results/$N.json --markdown benchmarks/SAMPLED_FAST_2026-11-29b.md
cp benchmarks/results/$N.json benchmarks/SAMPLED_FAST_2026-11-29b.md /work/runs/
