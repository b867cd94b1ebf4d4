#!/bin/bash
# Session 2026-12-02 (sixty-second), issue 20, the BiTA target on a 2-core AMD EPYC of family 25 (Zen 4): `eval bita`
# measured this machine's verify blocks cheaper than the other EPYCs' (T(6)/T(1) 1.03 against 1.20 on the Zen 5;
# predicted 1.47x at shape 2). Does the bench agree? The shipped adapter at its shape (2) alone and behind prompt
# lookup (`--method bita`'s default), prompt lookup alone, our plain decoding as the baseline in the same run.
# Greedy, 30 prompts x 128 tokens, no HF rows. From the worktree.
#   nohup benchmarks/campaigns/bench-2026-12-02-bita-zen4.sh COMMIT > /work/runs/bench-bita-zen4.log &
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "bita zen4"
B=smollm2-135m-bita
specdec bench spec --per-task 5 --max-new-tokens 128 --no-hf \
  --drafters "bita[2]:$B,lookup+bita[2]:$B,prompt-lookup" \
  --out benchmarks/results/bita_zen4_2026-12-02.json --markdown benchmarks/BITA_ZEN4_2026-12-02.md
echo "== done $(date -Is)"
