"""A Spec-Bench-format file of the user turns of the last N answers of an answer file (the primary
cache's held-out tail), to bench drafters on their own training distribution (a diagnostic).

    python heldout_questions.py ANSWERS.jsonl N OUT.jsonl
"""

import json
import sys
from pathlib import Path

from specdec.models import load_model

source, count, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
tokenizer = load_model("smollm2-135m").tokenizer
rows = [json.loads(line) for line in source.read_text().splitlines()][-count:]
with out.open("w") as file:
    for i, row in enumerate(rows):
        text = tokenizer.decode(row["prompt_ids"])
        user = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        file.write(json.dumps({"question_id": f"heldout-{i}", "category": "heldout", "turns": [user]}) + "\n")
