#!/bin/bash
# Session 2026-11-29 (forty-fourth), issue 20: score the head continued on the CPU (train-2026-11-29-eagle3-cpu.sh;
# HEAD its best checkpoint) against the shipped one, sequentially, on a CPU without BF16 (everything in fp32, the
# dtype the target runs in on the bench):
#   1. the fixed held-out set (benchmarks/data/heldout-9900000, cached by the training script), scored whole;
#   2. per Spec-Bench task on the target's own fp32 greedy answers to 10 first turns per task (whole caches, as
#      specbench-head-diag-2026-11-27.sh builds them; evaluation prompts are only scored, never trained on);
#   3. unless NO_BENCH: the bench A/B, 30 prompts x 128 tokens, greedy, our plain decoding the baseline in the same
#      run, the head alone as a tree and inside the default drafter.
# DIAG_ONLY=1 builds step 2's caches and stops (nothing to score yet).
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1
M=/work/main R=/work/runs/cpu29 HO=/work/runs/cpu29/primary-heldout9 D=/work/runs/cpu29/specbench-diag
SHIPPED=$M/src/specdec/models/drafts/smollm2-135m-eagle3 TAG=${TAG:-2026-11-29} LABEL=${LABEL:-cpu}
mkdir -p $D/turns $D/answers
echo "== Spec-Bench answers $(date -Is) $(lscpu | grep 'Model name') commit $(git -C $M rev-parse --short HEAD)"
python - <<PY
import json
from specdec.benchmarks.data import load_spec_bench, spec_bench_path
rows = load_spec_bench(spec_bench_path(), 10)
for task in sorted({r["task"] for r in rows}):
    with open(f"$D/turns/{task}.jsonl", "w") as f:
        f.writelines(json.dumps({"turns": [r["prompt"]]}) + "\\n" for r in rows if r["task"] == task)
PY
for turns in $D/turns/*.jsonl; do
  task=$(basename $turns .jsonl)
  [ -f $D/primary-$task-2048/meta.json ] && continue
  specdec data answers --prompts conversations:$turns --rounds 1 --max-new-tokens 128 --max-prompt-tokens 4096 \
    --dtype fp32 --batch-size 10 2>&1 | grep -v -E "it/s\]|s/it\]" > $D/answers/$task.log
  file=$(grep 'answer tokens: ' $D/answers/$task.log | tail -1 | sed 's/.*answer tokens: //')
  specdec data primary --dtype fp32 --answers "$file" \
    --output $D/primary-$task-2048 --max-len 2048 --batch-size 4 --hidden-layers 2,15,27 2>&1 \
    | grep -v -E "it/s\]|s/it\]"
done
[ -n "${DIAG_ONLY:-}" ] && exit 0
HEAD=${HEAD:?the head to score}
echo "== held-out $(date -Is)"
(cd $M && python benchmarks/campaigns/heldout_eagle3.py --whole --cache $HO --head shipped=$SHIPPED \
  --head $LABEL=$HEAD --sequences 240 --out $M/benchmarks/results/heldout_eagle3_$TAG.json \
  --markdown $M/benchmarks/HELDOUT_EAGLE3_$TAG.md)
echo "== Spec-Bench per task $(date -Is)"
CACHES=(); for c in $D/primary-*-2048; do CACHES+=(--cache "$c"); done
(cd $M && python benchmarks/campaigns/heldout_eagle3.py --whole "${CACHES[@]}" --head shipped=$SHIPPED \
  --head $LABEL=$HEAD --sequences 10 --out $M/benchmarks/results/specbench_head_diag_$TAG.json \
  --markdown $M/benchmarks/SPECBENCH_HEAD_DIAG_$TAG.md)
[ -n "${NO_BENCH:-}" ] && exit 0
echo "== bench A/B $(date -Is)"
(cd $M && specdec bench spec --per-task 5 --max-new-tokens 128 --heuristic-for "" --no-hf \
  --drafters "int8:tree-2:eagle3:smollm2-135m-eagle3,int8:tree-2:eagle3:$HEAD,lookup+int8:tree-2:eagle3:smollm2-135m-eagle3,lookup+int8:tree-2:eagle3:$HEAD" \
  --out $M/benchmarks/results/cpu_head_ab_$TAG.json --markdown $M/benchmarks/CPU_HEAD_AB_$TAG.md 2>&1 \
  | grep -v -E "it/s\]|s/it\]")
echo "== done $(date -Is)"
