#!/bin/bash
# Session 2026-11-27 (thirtieth), issue 20 deliverable 7, for the next lease: the bench on the GPU with the fast
# engine (CUDA graphs of the compiled target) for every trained drafter, now that verify blocks returning hidden
# states (the EAGLE-3 head, Tandem) or carrying BiTA's mask embeddings replay a graph too (c248a6b; before, they ran
# eagerly: Tandem 10.9 against 35.4 tok/s for plain in BENCHMARKS_GPU.md). Our fast plain decoding is the
# baseline in the same run (no HF rows: BENCHMARKS_GPU.md has them), bf16, greedy, PER_TASK Spec-Bench prompts per
# task x 128 tokens. Run on the warm machine after train-gpu-2026-11-27d.sh (its staging: wheels and the GGUF in
# $SITE, the shipped head and Tandem unpacked in $W/init; carry .gpu/m/question.jsonl, Spec-Bench from ../shared,
# and put smollm2-135m-bita and smollm2-135m-draft back into the tree: they load by name). Results in $OUT.
# The head's dynamic tree (dtree-4: up to 4 nodes a draft position) is in it since 2026-11-27 (thirty-second session):
# on the CPU it tied the top-k tree (blocks past ~8 tokens cost there); a GPU verifies 16-64 tokens for about one.
# The head ran on a GPU for the first time with this bench (the drafter was CPU-only before that session).
# lookup+bita (prompt lookup in front of the adapter, `--method bita`'s default since 2026-11-30) added in the
# fifty-third session, and the script dry-run again then at its commit.
# A CPU dry run: DEVICE=cpu ENGINE=eager PER_TASK=1 NEW=8 W=<a folder with init/> SITE=<the venv's site-packages>.
set -uo pipefail
W=${WORK:-/tmp/gpu-train} SITE=${SITE:-/tmp/site} PY=${PY:-python3} OUT=${OUT:-/tmp/out}
QUESTIONS=${QUESTIONS:-.gpu/m/question.jsonl}
export PYTHONPATH=$SITE:$PWD/src HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
echo "== bench $(date -Is) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)"
timeout "${BENCH_SECONDS:-420}" $PY -m specdec bench spec --device "${DEVICE:-cuda}" --dtype bfloat16 \
  --engine "${ENGINE:-fast}" --no-hf --heuristic-for "" --per-task "${PER_TASK:-5}" --max-new-tokens "${NEW:-128}" \
  --spec-bench "$QUESTIONS" --cache-dir "$W/hf" \
  --drafters "prompt-lookup,bf16:eagle3:$W/init/smollm2-135m-eagle3,bf16:dtree-4:eagle3:$W/init/smollm2-135m-eagle3,tandem:$W/init/smollm2-135m-tandem,bita:smollm2-135m-bita,lookup+bita:smollm2-135m-bita,smollm2-135m-draft" \
  --out "$OUT/bench_gpu_2026-11-27g.json" --markdown "$OUT/BENCH_GPU_2026-11-27g.md" 2>&1 | grep -v -E "it/s\]|s/it\]"
echo "== done $(date -Is) (exit ${PIPESTATUS[0]})"
