#!/bin/bash
# The two lr 1e-2 runs of the BiTA GPU campaign (session 2026-11-22c), as they were sent through the
# device tool after bita-gpu-2026-11-22.sh (same machine, /tmp/site and answers already in place):
# deep (after deep at 3e-2 collapsed; shipped as smollm2-135m-bita) with a 420 s limit, then none with
# the 270 s that was left (stopped at step 401 of 450). One change from what was sent: the last
# checkpoint is picked with sort -V (the sent command's sort brought back checkpoint-50).
# Usage: KIND=deep LIMIT=420 bash this-file
set -uo pipefail
KIND=${KIND:-deep}
LIMIT=${LIMIT:-420}
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
W=/tmp/bita-gpu
R=$W/runs/$KIND-lr1e-2
A=$(ls $W/answers/answers-*.jsonl | sed 's/^/--answers /' | tr '\n' ' ')
python3 -m specdec train bita --kind "$KIND" $A --output "$R" --steps 450 --batch-size 128 --groups 64 \
  --eval-every 50 --save-every 50 --eval-sequences 128 --bf16 on --lr 1e-2 --resume --time-limit "$LIMIT" \
  2>&1 | grep -v "train bita"
L=$(ls -d "$R"/checkpoint-* | sort -V | tail -1)
tar czf "$OUT/bita-$KIND-lr1e-2.tgz" -C "$R" log.jsonl train_config.json best "$(basename "$L")"
tail -1 "$R/log.jsonl"
