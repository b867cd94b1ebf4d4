#!/bin/bash
# Session 2026-11-27 (thirty-first), issue 20: tree-width-ab-2026-11-27h.sh found the default with the head as a
# width-2 tree (`lookup+int8:tree-2:eagle3:`) 1.04x the default with its chain (`lookup+bf16:eagle3:`), paired
# interval [0.99, 1.09] over the default bench's 30 prompts. This repeats the comparison on 30 *other* Spec-Bench
# prompts (the 9th, 25th, ... of each task: every 16th from the 8th, halfway between the default bench's, which
# takes every 16th from the first), with the head alone as a tree and the bf16 tree beside them; our plain
# decoding the baseline in the same run, 128 tokens, greedy, fp32 target. Evaluation prompts, scored only.
#   benchmarks/campaigns/default-confirm-2026-11-27h.sh [--out FILE --markdown FILE]
set -euo pipefail
export LD_PRELOAD=${LD_PRELOAD-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
SHARED=${SHARED:-$(git rev-parse --show-toplevel)/../shared}
H=smollm2-135m-eagle3 PROMPTS=$(mktemp --suffix .jsonl)
python - "$SHARED/data/eval/spec_bench/question.jsonl" "$PROMPTS" <<'PY'
import json, sys
from specdec.benchmarks.data import spec_bench_task
seen, kept = {}, []
for line in open(sys.argv[1]):
    row = json.loads(line)
    task = spec_bench_task(row["category"])
    seen[task] = seen.get(task, -1) + 1
    if seen[task] % 16 == 8:
        kept.append(line)
open(sys.argv[2], "w").writelines(kept)
print(f"{len(kept)} prompts")
PY
STAMP=$(date -u +%Y-%m-%d_%H%M)
specdec bench spec --spec-bench "$PROMPTS" --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:$H,lookup+bf16:eagle3:$H,lookup+int8:tree-2:eagle3:$H,lookup+bf16:tree-2:eagle3:$H" \
  --out "benchmarks/results/default_confirm_$STAMP.json" --markdown "benchmarks/DEFAULT_CONFIRM_$STAMP.md" "$@"
