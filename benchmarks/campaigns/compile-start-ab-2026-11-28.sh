#!/bin/bash
# Session 2026-11-28 (thirty-seventh), issue 20, CAMPAIGN.md next run 6: `--compile`'s start-up before and after the
# warm-up compiled only the shapes a caller meets (a plain server no verify blocks, `generate` no batch shapes, no
# pipeline the plain one-row steps its drafter's hidden-state steps replace). For each worktree given (old, new, ...),
# with an empty inductor cache every time: `generate --compile` with the default drafter (32 tokens, greedy; seconds
# to its end and the graphs dynamo compiled), then `serve --compile` with it (seconds to healthy, then one request,
# whose text is compared with eager plain decoding's). Writes benchmarks/results/compile_start_ab_<stamp>.log.
#   benchmarks/campaigns/compile-start-ab-2026-11-28.sh /work/bench-old /work/bench-new
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
D=lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 Q="Name three rivers in Europe."
LOG=/work/main/benchmarks/results/compile_start_ab_$(date -u +%Y-%m-%d_%H%M).log
echo "== $(date -Is) $(lscpu | grep 'Model name') $(nproc) cores" | tee -a "$LOG"
for TREE in "$@"; do
  export PYTHONPATH=$TREE/src TORCHINDUCTOR_CACHE_DIR
  TORCHINDUCTOR_CACHE_DIR=$(mktemp -d /tmp/inductor-cold.XXXX)
  C=$(git -C "$TREE" rev-parse --short HEAD)
  s=$(date +%s.%N)
  python - --compile --drafter $D --max-new-tokens 32 "$Q" > /tmp/compile-start-generate.txt 2>&1 <<'PY'
import sys
from torch._dynamo.utils import counters
from specdec.cli.main import main
code = main(["generate", *sys.argv[1:]])
print("graphs compiled:", counters["stats"]["unique_graphs"], "exit", code)
PY
  e=$(date +%s.%N); echo "$C generate --compile: $(echo "$e - $s" | bc) s, $(grep 'graphs compiled' /tmp/compile-start-generate.txt)" | tee -a "$LOG"
  TORCHINDUCTOR_CACHE_DIR=$(mktemp -d /tmp/inductor-cold.XXXX)
  s=$(date +%s.%N)
  specdec serve --compile --drafter $D --port 8765 > /tmp/compile-start-serve.log 2>&1 &
  PID=$!
  until curl -sf 127.0.0.1:8765/health > /dev/null; do sleep 2; kill -0 $PID || { echo "$C serve died" | tee -a "$LOG"; break; }; done
  e=$(date +%s.%N); echo "$C serve --compile healthy after $(echo "$e - $s" | bc) s" | tee -a "$LOG"
  s=$(date +%s.%N)
  curl -s 127.0.0.1:8765/v1/chat/completions -H 'Content-Type: application/json' \
    -d "{\"messages\": [{\"role\": \"user\", \"content\": \"$Q\"}], \"max_tokens\": 64, \"temperature\": 0}" > /tmp/r.json
  e=$(date +%s.%N); echo "$C one request $(echo "$e - $s" | bc) s" | tee -a "$LOG"
  kill $PID; wait $PID 2>/dev/null
  python - "$Q" <<'PY' | tee -a "$LOG"
import json, sys
from specdec.models import load_model
from specdec.pipeline import Pipeline
t = load_model("smollm2-135m")
got = json.load(open("/tmp/r.json"))["choices"][0]["message"]["content"]
want = Pipeline(t.model, t.tokenizer).generate([{"role": "user", "content": sys.argv[1]}], max_new_tokens=64).text
print("served text identical to eager plain decoding:", got == want, repr(got[:50]))
PY
done
