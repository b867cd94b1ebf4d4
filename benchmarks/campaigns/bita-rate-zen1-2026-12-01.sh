#!/bin/bash
# Session 2026-12-01 (fifty-sixth), issue 20, CAMPAIGN throughput table: what BiTA training does on an AVX2-only CPU
# without bf16 kernels (AMD EPYC of family 23), fp32 (`--bf16 auto` chooses it there), the forty-ninth session's
# settings (batch 8 x 64 mask groups, the shipped adapter continued on the committed chat batches), one 25-step run
# capped at 8 minutes into a scratch folder: SAR tokens a second from its log, nothing shipped.
#   (nohup benchmarks/campaigns/bita-rate-zen1-2026-12-01.sh COMMIT > /work/runs/bita-rate.log 2>&1 &)
set -uo pipefail
source "$(dirname "$0")/bench-tree-common.sh"
bench_tree "$1" "BiTA training rate"
export HF_HUB_OFFLINE=1
OUT=/work/runs/bita-rate
rm -rf $OUT
ANSWERS=$(ls benchmarks/data/self-intents-*/answers-*.jsonl.gz benchmarks/data/steered-*/answers-*.jsonl.gz)
sha256sum $ANSWERS | sha256sum | sed 's/^/== answers digest (sha256 of the files sha256s) /'
specdec train bita --init-from smollm2-135m-bita $(printf -- '--answers %s ' $ANSWERS) --output $OUT \
  --steps 25 --batch-size 8 --groups 64 --lr 3e-3 --warmup 20 --eval-every 1000 --save-every 1000 \
  --eval-sequences 8 --bf16 auto --time-limit 480 2>&1 | tr '\r' '\n' | grep -v -E "it/s\]|s/it\]"
python - $OUT/log.jsonl <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '"sar_tokens_seen"' in line]
first, last = rows[0], rows[-1]
rate = (last["sar_tokens_seen"] - first["sar_tokens_seen"]) / (last["elapsed_s"] - first["elapsed_s"])
print(f"== {len(rows)} steps, {last['sar_tokens_seen']} SAR tokens in {last['elapsed_s']} s; "
      f"steps 2-{len(rows)}: {rate:.0f} SAR tokens/s, {(last['elapsed_s'] - first['elapsed_s']) / (len(rows) - 1):.2f} s a step")
PY
echo "== done $(date -Is)"
