"""Session 2026-11-27 (thirty-second), CAMPAIGN next run 5 (issue 21, noticed): does our engine's plain
step get dearer per row between 16 and 64 rows? One process, B rows of random prompts of 200-700 tokens
(left-padded), one-token steps rolled back, the median of 6 after 2 warm-ups. Prints B, ms per step, tokens
per second and ms per row. Run with the machine to itself (log: results/batch_step_probe_2026-11-27i.log):
    python benchmarks/campaigns/batch-step-probe-2026-11-27i.py
"""

import statistics
import time

import torch

from specdec.engine import Engine
from specdec.models import load_model

target = load_model("smollm2-135m")
generator = torch.Generator().manual_seed(0)
for rows in (1, 4, 16, 32, 64):
    engine = Engine(target.model)
    lengths = torch.randint(200, 700, (rows,), generator=generator).tolist()
    prompts = [torch.randint(3, 49000, (n,), generator=generator).tolist() for n in lengths]
    with torch.inference_mode():
        engine.start(prompts, extra_slots=64)
        token = torch.randint(3, 49000, (rows, 1), generator=generator)
        times = []
        for _ in range(8):
            start = time.perf_counter()
            engine.extend(token)
            times.append(time.perf_counter() - start)
            engine.rollback(1)
    step = statistics.median(times[2:])
    print(
        rows,
        f"{step * 1000:.1f} ms/step",
        f"{rows / step:.0f} tok/s",
        f"{step * 1000 / rows:.2f} ms/row",
        flush=True,
    )
