#!/bin/bash
# Session 2026-11-23: more text the target wrote itself, for the next draft campaign (resumable caches under
# ~/.cache/specdec/answers): summaries of Gutenberg passages (a new key), then the gsm8k run stopped at 1,664/7,473.
set -euo pipefail
source /work/main/.venv/bin/activate
while pgrep -f campaign9.sh > /dev/null; do sleep 5; done
S=/work/shared/data/train
echo "== eval-draft $(date -Is)"
(cd /work/main && specdec eval-draft --draft /work/runs/draft-distil-long/best --heldout $S/gutenberg_en/test.jsonl.gz \
  --out /work/runs/eval-draft-distil-long.json) || echo "== eval-draft FAILED"
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
for spec in summarize:$S/gutenberg_en/train.jsonl.gz:768 gsm8k:$S/gsm8k/train.jsonl:7473; do
  count=${spec##*:}; src=${spec%:*}
  echo "== $src $count $(date -Is)"
  specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 256 --count $count --prompts $src
done
echo "== done $(date -Is)"
#!/bin/bash
# Session 2026-11-23: once the Gutenberg summaries (campaign10) are done, stop it before its gsm8k part and have
# the target answer requests it writes itself (Magpie; `--prompts self`): chat prompts like Spec-Bench's, where
# the draft trained on gsm8k/continue/summarize/explain-code answers agrees least.
set -uo pipefail
source /work/main/.venv/bin/activate
until grep -q "== gsm8k" campaign10.log; do sleep 5; done
pkill -f campaign10.sh; sleep 1; pkill -f "specdec data answers"; sleep 3
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
echo "== self 3072 $(date -Is) $(lscpu | grep 'Model name')"
specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 256 --count 3072 --prompts self
echo "== done $(date -Is)"
