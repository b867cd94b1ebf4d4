"""Probe: the compiled engine with and without inductor's GEMM autotuning, on an AVX2-only CPU.

Why: the suite's compiled tests built in about half the time once they stopped autotuning the C++ GEMM
template (130 -> 71 s for the compiled engine test on the AVX2-only EPYC of family 23, fifty-sixth session),
and on that CPU `--compile` takes 8 + 9 minutes to build the default pipeline. Does the template earn its
build time there? Two engines on two copies of SmolLM2-135M (fp32), each `compile_steps(one_token=True)`
with the shipped settings, the second with `max_autotune` off (inductor's default products: oneDNN's
prepacked linears, as freezing leaves them); then one-token steps at a 300-token context (rolled back after
each) and 5-token blocks, 7 rounds of 20 calls alternating engine by engine; prints each build's seconds,
the median round's ms a call and whether the logits agree bitwise. Run with jemalloc, the machine to itself
(its output, less the model-loading bars: `benchmarks/results/autotune_probe_2026-12-01.log`):

    python benchmarks/campaigns/autotune-probe-2026-12-01.py
"""

import copy
import statistics
import time

import torch

from specdec.engine import Engine, compiling
from specdec.models import load_model

torch.manual_seed(0)
model = load_model("smollm2-135m").model
engines = {}
start = time.perf_counter()
engines["autotuned"] = Engine(copy.deepcopy(model), compile=True)
print(f"built autotuned (shipped) in {time.perf_counter() - start:.0f} s", flush=True)
compiling.CPU_STEP_OPTIONS["max_autotune"] = False
start = time.perf_counter()
engines["default GEMMs"] = Engine(copy.deepcopy(model), compile=True)
print(f"built with default GEMMs in {time.perf_counter() - start:.0f} s", flush=True)
prompt = torch.randint(100, 40000, (1, 310), generator=torch.Generator().manual_seed(1))
for engine in engines.values():
    engine.reset(1, 512)
    engine.extend(prompt[:, :300])
for width in (1, 5):
    block = prompt[:, 300 : 300 + width]
    outs = {}
    for name, engine in engines.items():
        outs[name] = engine.extend(block).logits
        engine.rollback(width)
    same = torch.equal(*outs.values())
    gap = (outs["autotuned"] - outs["default GEMMs"]).abs().max().item()
    rounds = {name: [] for name in engines}
    for _ in range(7):
        for name, engine in engines.items():
            began = time.perf_counter()
            for _ in range(20):
                engine.extend(block)
                engine.rollback(width)
            rounds[name].append((time.perf_counter() - began) / 20 * 1e3)
    cells = ", ".join(f"{name} {statistics.median(r):.2f} ms" for name, r in rounds.items())
    print(f"width {width}: {cells}; bitwise equal {same} (max |difference| {gap:.2e})", flush=True)
