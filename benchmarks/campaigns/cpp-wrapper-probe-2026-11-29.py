"""Probe: SmolLM2's compiled one-token step and 5-token verify block with the graph's kernels called from
C++ (``cpp_wrapper``, as :data:`specdec.engine.compiling.CPU_STEP_OPTIONS` has it) or from inductor's
generated Python (``py``). One engine per process (a second compiled engine in a process reuses what the
first built): run it in pairs of processes, alternating. A 300-token context, 3 warm-up calls per shape,
then 3 rounds of 30 calls per shape; prints the build time and the median call of the median round.

    python benchmarks/campaigns/cpp-wrapper-probe-2026-11-29.py cpp|py
"""

import statistics
import sys
import time

import torch

from specdec.benchmarks.step_timing import primed_token
from specdec.engine import Engine, compiling
from specdec.models import load_model

wrapper = sys.argv[1]
if wrapper == "py":
    compiling.CPU_STEP_OPTIONS = compiling.CPU_STEP_OPTIONS | {"cpp_wrapper": False}
target = load_model("smollm2-135m")
start = time.perf_counter()
engine = Engine(target.model, compile=True)
print(wrapper, "built", round(time.perf_counter() - start), "s", flush=True)
primed_token(engine, 300, 16)
generator = torch.Generator().manual_seed(1)
vocab = target.model.get_input_embeddings().weight.shape[0]
rounds: dict[int, list[float]] = {}
with torch.inference_mode():
    for warm in (True, False, False, False):
        for n in (1, 5):
            block = torch.randint(3, vocab, (1, n), generator=generator)
            times = []
            for _ in range(3 if warm else 30):
                begin = time.perf_counter()
                engine.extend(block)
                times.append(time.perf_counter() - begin)
                engine.rollback(n)
            if not warm:
                rounds.setdefault(n, []).append(statistics.median(times))
print(wrapper, ", ".join(f"{n}: {statistics.median(v) * 1000:.2f} ms" for n, v in rounds.items()), flush=True)
