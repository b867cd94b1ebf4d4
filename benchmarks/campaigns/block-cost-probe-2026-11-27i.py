"""Session 2026-11-27 (thirty-second), issue 20: what a verify block of n tokens costs against a one-token
step on this machine, to size draft trees (how many nodes a block can hold before it stops being almost free).
One row, a random 300-token context, blocks of n random tokens (a causal block; a tree's mask costs the same
arithmetic), each rolled back; the median of 10 timed calls after 2 warm-ups, three rounds over n, the
median round. Prints n, milliseconds and T(n)/T(1). Run with the machine to itself:
    python benchmarks/campaigns/block-cost-probe-2026-11-27i.py
"""

import statistics
import time

import torch

from specdec.benchmarks.step_timing import primed_token
from specdec.engine import Engine
from specdec.models import load_model

SIZES = (1, 2, 4, 6, 8, 12, 16, 24, 32)

target = load_model("smollm2-135m")
engine = Engine(target.model)
primed_token(engine, 300, 80)
vocab = target.model.get_input_embeddings().weight.shape[0]
generator = torch.Generator().manual_seed(1)
rounds: dict[int, list[float]] = {}
with torch.inference_mode():
    for _ in range(3):
        for n in SIZES:
            block = torch.randint(3, vocab, (1, n), generator=generator)
            times = []
            for _ in range(12):
                start = time.perf_counter()
                engine.extend(block)
                times.append(time.perf_counter() - start)
                engine.rollback(n)
            rounds.setdefault(n, []).append(statistics.median(times[2:]))
one = statistics.median(rounds[1])
for n, times in rounds.items():
    print(n, f"{statistics.median(times) * 1000:.1f} ms", f"{statistics.median(times) / one:.3f}")
