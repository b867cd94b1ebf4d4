#!/bin/bash
# serve --compile's cold start (thirty-fourth session, CAMPAIGN.md next run 6): serve-compile-check-2026-11-27j.sh with
# an empty inductor cache (TORCHINDUCTOR_CACHE_DIR a fresh folder), so the time to healthy includes compiling every
# graph the warm-up builds, as on a fresh machine; then one request and two at once, each text against eager plain
# decoding. From /work/bench-tree at the commit to check; writes in /tmp/prof-cold.
source /work/main/.venv/bin/activate
export PYTHONPATH=/work/bench-tree/src LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 HF_HUB_OFFLINE=1
rm -rf /tmp/prof-cold && mkdir -p /tmp/prof-cold/inductor && cd /tmp/prof-cold
export TORCHINDUCTOR_CACHE_DIR=/tmp/prof-cold/inductor
echo "== $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/bench-tree rev-parse --short HEAD)"
t0=$(date +%s.%N)
specdec serve --compile --drafter lookup+int8:tree-2:eagle3:smollm2-135m-eagle3 --port 8765 > serve.log 2>&1 &
PID=$!
until curl -sf 127.0.0.1:8765/health > /dev/null; do sleep 2; kill -0 $PID || { echo died; tail serve.log; exit 1; }; done
t1=$(date +%s.%N); echo "healthy after $(echo "$t1 - $t0" | bc) s"
req() { curl -s 127.0.0.1:8765/v1/chat/completions -H 'Content-Type: application/json' \
  -d "{\"messages\": [{\"role\": \"user\", \"content\": \"$1\"}], \"max_tokens\": 64, \"temperature\": 0}"; }
s=$(date +%s.%N); req "Name three rivers in Europe." > r1.json; e=$(date +%s.%N); echo "one request $(echo "$e - $s" | bc) s"
s=$(date +%s.%N); req "Why is the sky blue?" > r2.json & B=$!; req "Write a haiku about tea." > r3.json; wait $B
e=$(date +%s.%N); echo "two at once $(echo "$e - $s" | bc) s"
kill $PID; wait $PID 2>/dev/null
python - <<'PY'
import json
from specdec.models import load_model
from specdec.pipeline import Pipeline
t = load_model("smollm2-135m"); p = Pipeline(t.model, t.tokenizer)
for f, q in (("r1.json", "Name three rivers in Europe."), ("r2.json", "Why is the sky blue?"), ("r3.json", "Write a haiku about tea.")):
    got = json.load(open(f))["choices"][0]["message"]["content"]
    want = p.generate([{"role": "user", "content": q}], max_new_tokens=64).text
    print(f, "identical to eager plain:", got == want, repr(got[:60]), flush=True)
PY
