#!/bin/bash
# Session 2026-11-27 (twenty-seventh), issue 20, CAMPAIGN "next runs" 2: why held-out gains of the head barely
# reach Spec-Bench. The target's own greedy answers (bf16, 128 tokens) to 10 Spec-Bench first turns per task are
# cached twice per task: whole (--max-len 2048: the answer sees its real prompt at its real positions, as in the
# bench) and cut as every training cache is (--max-len 256: the prompt's start dropped, positions from 0). The
# shipped head is scored on every sequence of each (heldout_eagle3.py --whole). If the cut copies of the long-prompt
# tasks (RAG, summaries) score far above their whole copies, the head's 256-token training length is the gap.
# Evaluation prompts are only scored here, never trained on: their answers live in /work/runs/specbench-diag.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main D=/work/runs/specbench-diag
mkdir -p $D/turns $D/answers
echo "== answers $(date -Is) $(lscpu | grep 'Model name')"
python - <<PY
import json
from specdec.benchmarks.data import load_spec_bench, spec_bench_path
rows = load_spec_bench(spec_bench_path(), 10)
for task in sorted({r["task"] for r in rows}):
    with open(f"$D/turns/{task}.jsonl", "w") as f:
        for r in rows:
            if r["task"] == task:
                f.write(json.dumps({"turns": [r["prompt"]]}) + "\n")
PY
CACHES=()
for turns in $D/turns/*.jsonl; do
  task=$(basename $turns .jsonl)
  specdec data answers --prompts conversations:$turns --rounds 1 --max-new-tokens 128 --max-prompt-tokens 4096 \
    --dtype bf16 --batch-size 10 2>&1 | grep -v -E "it/s\]|s/it\]" | tee $D/answers/$task.log
  file=$(ls -t ~/.cache/specdec/answers/answers-*.jsonl | head -1)
  mv "$file" $D/answers/$task.jsonl && mv "$(ls -t ~/.cache/specdec/answers/manifest-*.json | head -1)" $D/answers/
  for len in 2048 256; do
    specdec data primary --dtype bf16 --answers $D/answers/$task.jsonl --output $D/primary-$task-$len \
      --max-len $len --batch-size 4 --hidden-layers 2,15,27 2>&1 | grep -v -E "it/s\]|s/it\]"
    CACHES+=(--cache $D/primary-$task-$len)
  done
done
echo "== heads $(date -Is)"
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --whole "${CACHES[@]}" \
  --head shipped=src/specdec/models/drafts/smollm2-135m-eagle3 --sequences 10 \
  --out $M/benchmarks/results/specbench_head_diag_2026-11-27.json \
  --markdown $M/benchmarks/SPECBENCH_HEAD_DIAG_2026-11-27.md)
echo "== done $(date -Is) (exit $?)"
