"""Teacher-forced depth-1 agreement of the shipped EAGLE-3 head by answer position (the first, the first ten,
the rest) on the target's own answers to 10 Spec-Bench first turns per task (the caches of
specbench-head-diag-2026-11-27.sh): are a live decoder's rejected first steps (first_steps.py) in the head?

    python benchmarks/campaigns/early_positions.py summarization rag math_reasoning
"""

import sys
from pathlib import Path

import torch

from specdec.models import load_model
from specdec.models.eagle3_layout import load_head
from specdec.training.eagle3 import pass_targets, unrolled_logits
from specdec.training.primary_cache import PrimaryCache

HEAD = Path("src/specdec/models/drafts/smollm2-135m-eagle3")
CACHES = Path("/work/runs/specbench-diag")


def main(tasks: list[str]) -> None:
    embeddings = load_model("smollm2-135m").model.get_input_embeddings().weight.float()
    head = load_head(HEAD).eval()
    for task in tasks:
        cache = PrimaryCache(CACHES / f"primary-{task}-2048")
        counts = {"first": [0, 0], "1-10": [0, 0], "later": [0, 0]}
        with torch.no_grad():
            for start in range(0, min(len(cache), 10), 2):
                data = cache.batch(list(range(start, min(start + 2, len(cache)))), embeddings.device)
                logits = unrolled_logits(head, embeddings, data, 1)[0]
                where, _, ids = pass_targets(data, 0, logits.shape[1])
                match = (head.draft_ids[logits.argmax(-1)] == ids[..., 0]) & where
                rank = where.long().cumsum(-1)  # 1: the first answer position
                masks = {"first": rank == 1, "1-10": rank <= 10, "later": rank > 10}
                for name, mask in masks.items():
                    counts[name][0] += (match & mask & where).sum().item()
                    counts[name][1] += (mask & where).sum().item()
        shares = ", ".join(f"{k} {a / max(n, 1):.2f} ({n})" for k, (a, n) in counts.items())
        print(f"{task}: depth-1 agreement by answer position: {shares}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
