#!/bin/bash
# Session 2026-11-27 (thirty-first), issue 20: the tree default (`lookup+int8:tree-2:eagle3:`) under load, then the
# chain default before it (`lookup+bf16:eagle3:`), each in its own `specdec bench server` run (speculation on
# against off in rotated rounds, over HTTP on 127.0.0.1) at 1 and 16 concurrent clients, 2 rounds, a burst of 20
# streams. A tree's extra nodes cost little on one row but every row's count at 16. Run with the machine to itself,
# from a worktree at a fixed commit; OUT names the folder the results go to (each run its own files).
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
OUT=${OUT:-benchmarks}
H=smollm2-135m-eagle3
for pair in "tree lookup+int8:tree-2:eagle3:$H" "chain lookup+bf16:eagle3:$H"; do
  read -r name drafter <<< "$pair"
  echo "== $name $(date -Is)"
  specdec bench server --drafter "$drafter" --concurrency 1 16 --rounds 2 --streams 20 \
    --out "$OUT/results/serve_tree_ab_2026-11-27h_$name.json" --markdown "$OUT/SERVE_TREE_AB_2026-11-27h_$name.md"
done
echo "== done $(date -Is)"
