#!/bin/bash
# Session 2026-11-27 (thirtieth), issue 20: score the head continued on steered data (train-2026-11-27g-eagle3-steered.sh,
# HEAD=its best checkpoint, LABEL its name in the tables) against the shipped one, sequentially, from a worktree at a fixed commit (/work/bench-tree):
#   1. the fixed held-out set (benchmarks/data/heldout-9900000, general chat no run trains on), cached with the head's
#      layers and scored whole, as gpu-followup-2026-11-27f.sh did;
#   2. per Spec-Bench task on the target's own answers to 10 first turns per task (the whole caches that
#      specbench-head-diag-2026-11-27.sh builds, built here; evaluation prompts are only scored, never trained on);
#   3. the bench A/B (bench-2026-11-27d-vocab-head.sh: 30 prompts, the head alone as a tree and inside the default),
#      our plain decoding the baseline in the same run.
set -uo pipefail
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
export MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 HF_HUB_OFFLINE=1
M=/work/main R=/work/runs HO=/work/runs/primary-heldout9 D=/work/runs/specbench-diag
SHIPPED=/work/bench-tree/src/specdec/models/drafts/smollm2-135m-eagle3 HEAD=${HEAD:?the head to score}
TAG=${TAG:-2026-11-27g} LABEL=${LABEL:-steered}  # the scored head's name in the tables
echo "== held-out cache $(date -Is) $(lscpu | grep 'Model name')"
if [ ! -f $HO/meta.json ]; then
  gunzip -c $M/benchmarks/data/heldout-9900000/answers-*.jsonl.gz > $R/heldout-9900000.jsonl
  specdec data primary --answers $R/heldout-9900000.jsonl --output $HO --max-len 256 --batch-size 16 \
    --dtype bf16 --hidden-layers 0,2,15,27,29 2>&1 | grep -v -E "it/s\]|s/it\]"
fi
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --whole --cache $HO \
  --head shipped=$SHIPPED --head $LABEL=$HEAD --sequences 240 \
  --out $M/benchmarks/results/heldout_eagle3_$TAG.json --markdown $M/benchmarks/HELDOUT_EAGLE3_$TAG.md)
echo "== Spec-Bench per task $(date -Is)"
mkdir -p $D/turns $D/answers
python - <<PY
import json
from specdec.benchmarks.data import load_spec_bench, spec_bench_path
rows = load_spec_bench(spec_bench_path(), 10)
for task in sorted({r["task"] for r in rows}):
    with open(f"$D/turns/{task}.jsonl", "w") as f:
        f.writelines(json.dumps({"turns": [r["prompt"]]}) + "\\n" for r in rows if r["task"] == task)
PY
for turns in $D/turns/*.jsonl; do  # as specbench-head-diag-2026-11-27.sh, the whole (2,048-token) caches only
  task=$(basename $turns .jsonl)
  [ -f $D/primary-$task-2048/meta.json ] && continue
  specdec data answers --prompts conversations:$turns --rounds 1 --max-new-tokens 128 --max-prompt-tokens 4096 \
    --dtype bf16 --batch-size 10 2>&1 | grep -v -E "it/s\]|s/it\]" > $D/answers/$task.log
  file=$(grep 'answer tokens: ' $D/answers/$task.log | tail -1 | sed 's/.*answer tokens: //')
  specdec data primary --dtype bf16 --answers "$file" --output $D/primary-$task-2048 --max-len 2048 --batch-size 4 \
    --hidden-layers 2,15,27 2>&1 | grep -v -E "it/s\]|s/it\]"
done
CACHES=(); for c in $D/primary-*-2048; do CACHES+=(--cache "$c"); done
(cd /work/bench-tree && python benchmarks/campaigns/heldout_eagle3.py --whole "${CACHES[@]}" \
  --head shipped=$SHIPPED --head $LABEL=$HEAD --sequences 10 \
  --out $M/benchmarks/results/specbench_head_diag_$TAG.json --markdown $M/benchmarks/SPECBENCH_HEAD_DIAG_$TAG.md)
[ -n "${NO_BENCH:-}" ] && exit 0
echo "== bench A/B $(date -Is)"
(cd /work/bench-tree && HEAD_DIR=$HEAD bash benchmarks/campaigns/bench-2026-11-27d-vocab-head.sh \
  --out $M/benchmarks/results/steered_head_ab_$TAG.json --markdown $M/benchmarks/STEERED_HEAD_AB_$TAG.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]")
echo "== done $(date -Is)"
