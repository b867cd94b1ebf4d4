"""Probe: the compiled engine's one-token step with and without GCC_REGISTER_OPTIONS, on an AVX2-only CPU.

Why: on the AVX2-only EPYC (family 23) `gemm-rows-probe-2026-11-29.py` found the options 5-6 % dearer for one
SmolLM2 linear at 1-2 rows and 9-20 % cheaper at 3-9 rows (`results/gemm_rows_probe_2026-11-30_zen1.log`; on
the AVX-512 EPYC one to four rows cost the same either way). If the whole one-token step is cheaper without
them, the one-token graph could be built without them and the verify graphs with them. Two engines on two
copies of SmolLM2-135M (fp32), each `compile_steps(one_token=True)`, the second with `gcc_options` returning
nothing when it builds; then one-token steps at a 300-token context (rolled back after each) and 5-token
blocks, 7 rounds of 20 calls alternating engine by engine; prints the median round's ms a call, and whether
the logits agree bitwise. Run with jemalloc, the machine to itself (its output, less the model-loading bars:
`benchmarks/results/one_row_gcc_probe_2026-11-30.log`):

    python benchmarks/campaigns/one-row-gcc-probe-2026-11-30.py
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
engines["with options"] = Engine(copy.deepcopy(model), compile=True)
print(f"built with options in {time.perf_counter() - start:.0f} s", flush=True)
compiling.gcc_options = lambda: {}
start = time.perf_counter()
engines["without"] = Engine(copy.deepcopy(model), compile=True)
print(f"built without in {time.perf_counter() - start:.0f} s", flush=True)
prompt = torch.randint(100, 40000, (1, 310), generator=torch.Generator().manual_seed(1))
for engine in engines.values():
    engine.reset(1, 512)
    engine.extend(prompt[:, :300])
outs = {}
for width in (1, 5):
    block = prompt[:, 300 : 300 + width]
    for name, engine in engines.items():
        outs[name] = engine.extend(block).logits
        engine.rollback(width)
    same = torch.equal(outs["with options"], outs["without"])
    rounds = {name: [] for name in engines}
    for _ in range(7):
        for name, engine in engines.items():
            began = time.perf_counter()
            for _ in range(20):
                engine.extend(block)
                engine.rollback(width)
            rounds[name].append((time.perf_counter() - began) / 20 * 1e3)
    cells = ", ".join(f"{name} {statistics.median(r):.2f} ms" for name, r in rounds.items())
    print(f"width {width}: {cells}; bitwise equal {same}", flush=True)
