"""Distinct requests and answer tokens over every committed self-intents batch (a request repeated across
batches is counted once). Run from the repository root: python benchmarks/data/distinct.py"""

import glob
import gzip
import json

GPU_SEEDS_FROM = 1400000  # the batches written on the lent H200 (README.md)
seen: set[tuple[int, ...]] = set()
rows = tokens = gpu_tokens = 0
for path in sorted(glob.glob("benchmarks/data/self-intents-*/answers-*.jsonl.gz")):
    seed = int(path.split("self-intents-")[1].split("/")[0])
    with gzip.open(path, "rt") as lines:
        for line in lines:
            row = json.loads(line)
            rows += 1
            if (key := tuple(row["prompt_ids"])) not in seen:
                seen.add(key)
                tokens += len(row["answer_ids"])
                gpu_tokens += len(row["answer_ids"]) if seed >= GPU_SEEDS_FROM else 0
print(
    f"{rows:,} answered rows, {len(seen):,} distinct requests, "
    f"{tokens:,} answer tokens over distinct requests "
    f"({gpu_tokens:,} of them from the GPU batches)"
)
