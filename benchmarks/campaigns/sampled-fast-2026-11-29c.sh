#!/bin/bash
# sampled-fast-2026-11-29b.sh again (the 1.45x run went on a VM ~3.8x slower than usual: not quotable), at 3eade4a
# (ec11315's top-p cut, Int8Linear, catch-up logits at the last pair), from /work/bench-new, the same command.
cd /work/bench-new
export PYTHONPATH=/work/bench-new/src PATH=/work/main/.venv/bin:$PATH LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
N=sampled_fast_2026-11-29c
specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --engine fast --no-hf \
  --temperature 0.8 --top-p 0.95 --verify coupled \
  --drafters lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 \
  --out benchmarks/results/$N.json --markdown benchmarks/SAMPLED_FAST_2026-11-29c.md
cp benchmarks/results/$N.json benchmarks/SAMPLED_FAST_2026-11-29c.md /work/runs/
