"""Probe: what a verify block of n tokens costs against a one-token step on the compiled CPU engine
(``Engine(compile=True)``, what ``--compile`` and the bench's fast rows run), beside the eager engine, on one
machine in one process; with the EAGLE-3 head's hidden layers returned (as the default drafter's blocks are)
and without. One row, a 300-token context, blocks of n random tokens rolled back after each, every shape run
twice before timing (compiles included there), then 3 rounds of 20 calls per engine and shape, engines
alternating call by call, the median per round and the median round. Prints n, ms and T(n)/T(1) per engine.

    python benchmarks/campaigns/compiled-block-cost-probe-2026-11-29b.py
"""

import statistics
import time

import torch

from specdec.benchmarks.step_timing import primed_token
from specdec.engine import Engine
from specdec.models import load_model

SIZES = (1, 2, 3, 4, 5, 6, 8)
HIDDEN = (2, 15, 27)  # the shipped EAGLE-3 head's layers

target = load_model("smollm2-135m")
start = time.perf_counter()
engines = {"eager": Engine(target.model), "compiled": Engine(target.model, compile=True)}
print(f"engines built in {time.perf_counter() - start:.0f} s", flush=True)
tokens = {name: primed_token(engine, 300, 16) for name, engine in engines.items()}
vocab = target.model.get_input_embeddings().weight.shape[0]
generator = torch.Generator().manual_seed(1)
rounds: dict[tuple[str, tuple, int], list[float]] = {}
with torch.inference_mode():
    for hidden in ((), HIDDEN):
        for n in SIZES:
            block = torch.randint(3, vocab, (1, n), generator=generator)
            for engine in engines.values():
                for _ in range(2):
                    engine.extend(block, hidden_layers=hidden)
                    engine.rollback(n)
    print("warm", flush=True)
    for _ in range(3):
        for hidden in ((), HIDDEN):
            for n in SIZES:
                block = torch.randint(3, vocab, (1, n), generator=generator)
                times: dict[str, list[float]] = {name: [] for name in engines}
                for _ in range(20):
                    for name, engine in engines.items():
                        begin = time.perf_counter()
                        engine.extend(block, hidden_layers=hidden)
                        times[name].append(time.perf_counter() - begin)
                        engine.rollback(n)
                for name, values in times.items():
                    rounds.setdefault((name, hidden, n), []).append(statistics.median(values))
for name in engines:
    for hidden in ((), HIDDEN):
        one = statistics.median(rounds[(name, hidden, 1)])
        row = ", ".join(
            f"{n}: {statistics.median(rounds[(name, hidden, n)]) * 1000:.1f} ms "
            f"{statistics.median(rounds[(name, hidden, n)]) / one:.2f}"
            for n in SIZES
        )
        print(f"{name}, hidden {hidden or 'none'}: {row}", flush=True)
