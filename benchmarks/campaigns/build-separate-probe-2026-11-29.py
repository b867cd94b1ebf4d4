"""Probe: the compiled default pipeline for SmolLM2 (the default drafter's hidden-state steps included)
built with inductor's C++ wrapper compiled as one file with the graph's kernels (``joint``, torch's
default) or apart from them (``separate``: ``cpp_wrapper_build_separate``). The joint file lists the
frozen weights with their Python object ids, so its source, and its build, are new in every process;
the kernels alone are the same source from one process to the next, and inductor's on-disk cache
reuses their build. Prints the pipeline's build time, then the target's one-token step and 5- and
8-token blocks (a 300-token context, 3 warm-up calls per shape, 3 rounds of 20 calls, the median call of
the median round). One pipeline per process: run it in pairs of processes, alternating.

    python benchmarks/campaigns/build-separate-probe-2026-11-29.py joint|separate
"""

import statistics
import sys
import time

import torch

from specdec import Pipeline, make_drafter
from specdec.benchmarks.step_timing import primed_token, timed_steps
from specdec.engine import compiling
from specdec.models import load_model
from specdec.models.packaged import default_drafter

mode = sys.argv[1]
compiling.CPU_STEP_OPTIONS = compiling.CPU_STEP_OPTIONS | {"cpp_wrapper_build_separate": mode == "separate"}
target = load_model("smollm2-135m")
drafter = make_drafter(default_drafter("smollm2-135m"), target.model, target.tokenizer)
start = time.perf_counter()
pipe = Pipeline(target.model, target.tokenizer, drafter=drafter, compile=True)
print(mode, "built", round(time.perf_counter() - start), "s", flush=True)
engine = pipe.engine
token = primed_token(engine, 300, 16)
generator = torch.Generator().manual_seed(1)
blocks = {n: torch.randint(3, 49152, (1, n), generator=generator) for n in (5, 8)} | {1: token}
rounds: dict[int, list[float]] = {}
for warm in (True, False, False, False):
    for n, block in sorted(blocks.items()):
        times = timed_steps(engine, block, 3 if warm else 20)
        if not warm:
            rounds.setdefault(n, []).append(statistics.median(times))
print(mode, ", ".join(f"{n}: {statistics.median(v) * 1000:.2f} ms" for n, v in rounds.items()), flush=True)
