#!/bin/bash
# Session 2026-11-27 (thirtieth), issue 20: German -> English requests in the form users type them (Spec-Bench's
# translation task is WMT14 De -> En), written without any German corpus: COUNT sentences of 10-35 words sampled
# (seed 7) from the first 60 of Gutenberg's English train books (../shared), the target asked "Translate into
# German: ..." (its own German: stage 1), then asked "Translate German to English: <that German>" (stage 2). Both
# answers are the target's own (bf16, greedy, batch 64, 128 new tokens); stage 2's answers are the training data.
# The self-written translation requests of data-2026-11-27f-translate-summarize.sh are mostly English text the
# target then translates *into* French or German; these are German-looking inputs with English answers, as in the
# bench. The first run (2026-11-27) lacked `--count`, so `data answers` took its default 1,000 of the 1,536 stage-1
# requests: 1,000 German answers (591 cut at 128 tokens, looping), 404 whole ones of >= 5 words kept for stage 2.
# ANSWER_COUNT=1000 rebuilds that run; B names the run folder (the thirty-second session: COUNT=6000
# B=/work/runs/backtranslate-6000). Not committed (Gutenberg text from ../shared); greedy, so a rebuild on the
# same kind of CPU writes the same files.
set -uo pipefail
source /work/main/.venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
export HF_HUB_OFFLINE=1
B=${B:-/work/runs/backtranslate} SHARED=${SHARED:-/work/main/../shared}
mkdir -p $B
echo "== stage 1 $(date -Is) $(lscpu | grep 'Model name') commit $(git -C /work/main rev-parse --short HEAD)"
python - "$SHARED/data/train/gutenberg_en/train.jsonl.gz" "$B/stage1.jsonl" "${COUNT:-1536}" <<'PY'
import gzip, json, random, re, sys
source, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
sentences = set()
with gzip.open(source, "rt") as books:
    for _, line in zip(range(60), books):
        text = " ".join(json.loads(line)["text"].split())
        for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text):
            if 10 <= len(s.split()) <= 35 and s[-1] in ".!?" and not re.search(r"[0-9_*\[\]{}|<>]", s):
                sentences.add(s)
picked = random.Random(7).sample(sorted(sentences), count)
with open(out, "w") as f:
    f.writelines(json.dumps({"turns": [f"Translate into German: {s}"]}) + "\n" for s in picked)
print(f"{len(sentences)} candidate sentences, {len(picked)} picked")
PY
answers() {  # conversations file -> the answers file's path (printed by `data answers`)
  specdec data answers --prompts "conversations:$1" --rounds 1 --count "${ANSWER_COUNT:-${COUNT:-1536}}" --max-new-tokens 128 \
    --max-prompt-tokens 768 --dtype bf16 --batch-size 64 2>&1 | grep -v -E "it/s\]|s/it\]" | tee -a $B/log.txt | grep 'answer tokens: ' \
    | tail -1 | sed 's/.*answer tokens: //'
}
FIRST=$(answers $B/stage1.jsonl)
echo "== stage 2 $(date -Is) from $FIRST"
python - "$FIRST" "$B/stage2.jsonl" <<'PY'
import json, sys
from specdec.models import load_model
tokenizer = load_model("smollm2-135m").tokenizer
kept = 0
with open(sys.argv[1]) as answers, open(sys.argv[2], "w") as out:
    for line in answers:
        ids = json.loads(line)["answer_ids"]
        if not ids or ids[-1] != tokenizer.eos_token_id:
            continue  # cut at 128 tokens: not a whole translation
        german = tokenizer.decode(ids, skip_special_tokens=True).strip().split("\n")[0].strip('" ')
        if len(german.split()) >= 5:
            out.write(json.dumps({"turns": [f"Translate German to English: {german}"]}) + "\n")
            kept += 1
print(f"{kept} stage-2 requests")
PY
SECOND=$(answers $B/stage2.jsonl)
echo "== done $(date -Is): stage 2 answers $SECOND"
