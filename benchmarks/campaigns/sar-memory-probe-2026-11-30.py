"""RSS (MB) after each BiTA training step and seconds a step (sar_logits + backward, bf16 autocast,
batch 8 x 64 mask groups, no optimiser) on the committed chat answers, to compare allocators: run it
under each LD_PRELOAD / MALLOC_CONF. Session 2026-11-30 (fiftieth), issue 20: the two-pass step OOMed
a CPU run under dirty_decay_ms:-1.

    [LD_PRELOAD=libjemalloc.so.2 [MALLOC_CONF=...]] python \
        benchmarks/campaigns/sar-memory-probe-2026-11-30.py N
"""

import glob
import sys
import time
from pathlib import Path

import torch

from specdec.drafters.factory import bita_folder
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter
from specdec.training import sar
from specdec.training.answers import read_answers


def rss_mb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 // 2**20


def main(steps: int) -> None:
    model = load_model("smollm2-135m").model.requires_grad_(False).eval()
    adapter = BiTAAdapter.from_pretrained(bita_folder("smollm2-135m-bita")).train()
    answers = read_answers(Path(sorted(glob.glob("benchmarks/data/self-intents-1*/answers-*.jsonl.gz"))[0]))
    generator = torch.Generator().manual_seed(0)
    start, after = time.perf_counter(), []
    for _ in range(steps):
        picks = torch.randint(0, len(answers), (8,), generator=generator).tolist()
        batch = sar.sar_batch([answers[i] for i in picks], 64, 3, 256, generator)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = sar.sar_logits(model, adapter, batch)
        sar.sar_loss(logits, batch["labels"]).backward()
        after.append(rss_mb())
    print("rss per step", after, "s/step", round((time.perf_counter() - start) / steps, 2), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
