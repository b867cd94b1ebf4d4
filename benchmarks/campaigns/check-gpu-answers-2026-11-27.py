"""Session 2026-11-27, issue 20: how far the H200's bf16 answers are from this CPU's answers to the same
requests, set beside how far the CPU's own bf16 and fp32 answers are from each other (greedy all; kernels
round differently, so a near-tie can flip and two answers part there). Answers the first ROWS rows of a
committed batch again on the CPU in bf16 and in fp32, one batch each, and prints for each pair the share of
identical answers and the first answer's tokens before the two part.
Usage: python benchmarks/campaigns/check-gpu-answers-2026-11-27.py benchmarks/data/self-intents-1400000 [ROWS]
"""

import glob
import gzip
import itertools
import json
import sys

from specdec.models import load_model
from specdec.pipeline import Pipeline


def agreement(first: list[list[int]], second: list[list[int]]) -> dict:
    """Identical answers, and the share of ``first``'s tokens before each pair parts."""
    before = [
        next((i for i, (a, b) in enumerate(zip(x, y, strict=False)) if a != b), min(len(x), len(y)))
        for x, y in zip(first, second, strict=True)
    ]
    same = sum(x == y for x, y in zip(first, second, strict=True))
    return {"identical": same, "tokens_before_parting": sum(before), "tokens": sum(len(x) for x in first)}


folder, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64
with gzip.open(glob.glob(f"{folder}/answers-*.jsonl.gz")[0], "rt") as lines:
    rows = [json.loads(line) for line in itertools.islice(lines, count)]
answers = {"committed": [r["answer_ids"] for r in rows]}
for dtype in ("bf16", "float32"):
    target = load_model("smollm2-135m", dtype=dtype)
    pipe = Pipeline(target.model, target.tokenizer)
    answers[f"cpu-{dtype}"] = pipe.generate(
        [r["prompt_ids"] for r in rows], method="plain", max_new_tokens=128
    ).token_ids
pairs = {f"{a} vs {b}": agreement(answers[a], answers[b]) for a, b in itertools.combinations(answers, 2)}
print(json.dumps({"folder": folder, "rows": len(rows), "pairs": pairs}, indent=1))
