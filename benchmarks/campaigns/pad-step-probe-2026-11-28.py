"""Session 2026-11-28 (thirty-fourth), CAMPAIGN next run 5 (the c = 64 gap): does a batch's plain step cost
what its rows hold, or what its longest row holds? The serving run of 2026-11-26 decoded at 252 tok/s with
16 clients and 157 with 64 (`results/continuous_batching_2026-11-26b.json`, time outside prefills), while
`batch- step-probe-2026-11-27i.py` (every row 200-700 tokens) found a step's cost per row flat from 16 to
64 rows. One hypothesis fits both: the batch's cache is as long as its longest row, so every row's
attention reads that length, and 64 Spec-Bench requests hold a longer prompt than 16 do. Here, at 16 and
64 rows: every row 300 tokens; the same with one row of 1,500; every row 1,500. One-token steps rolled
back, the median of 6 after 2 warm-ups. Run with the machine to itself (log:
results/pad_step_probe_2026-11-28.log):
    python benchmarks/campaigns/pad-step-probe-2026-11-28.py
"""

import statistics
import time

import torch

from specdec.engine import Engine
from specdec.models import load_model

target = load_model("smollm2-135m")
generator = torch.Generator().manual_seed(0)
for rows in (16, 64):
    for label, lengths in (
        ("all 300", [300] * rows),
        ("one 1500", [1500] + [300] * (rows - 1)),
        ("all 1500", [1500] * rows),
    ):
        engine = Engine(target.model)
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
        print(rows, label, f"{step * 1000:.1f} ms/step", f"{step * 1000 / rows:.2f} ms/row", flush=True)
