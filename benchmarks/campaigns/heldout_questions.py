"""A Spec-Bench-format file of the user turns of the last N answers of an answer file (the primary
cache's held-out tail), to bench drafters on their own training distribution (a diagnostic)."""
import json, sys
from pathlib import Path
from specdec.models import load_model
src, n, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
tok = load_model("smollm2-135m").tokenizer
rows = [json.loads(l) for l in src.read_text().splitlines()][-n:]
with out.open("w") as f:
    for i, r in enumerate(rows):
        text = tok.decode(r["prompt_ids"])
        user = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        f.write(json.dumps({"question_id": f"heldout-{i}", "category": "heldout", "turns": [user]}) + "\n")
print(open(out).read()[:800])
