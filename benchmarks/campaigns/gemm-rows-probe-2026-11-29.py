"""Probe: one SmolLM2 linear (576 -> 1536, fp32) under the compiled engine's inductor settings, with and
without :data:`specdec.engine.compiling.GCC_REGISTER_OPTIONS`, at 1-9 rows (symbolic rows, as a verify
graph has), each on its own copy of the weights (one module's graphs share one dynamo cache). Both graphs
are built first, then each row count is timed in 5 rounds of 200 calls, the two graphs alternating round
by round; prints the median call of the median round in microseconds, and the two outputs' largest
difference (the options change unrolling, not arithmetic: 0 expected).

    python benchmarks/campaigns/gemm-rows-probe-2026-11-29.py
"""

import statistics
import time

import torch
import torch._inductor.config as inductor_config

from specdec.engine.compiling import CPU_STEP_OPTIONS, gcc_options

torch.manual_seed(0)
linear = torch.nn.Linear(576, 1536, bias=False).eval()
settings = {"without": CPU_STEP_OPTIONS, "with": CPU_STEP_OPTIONS | gcc_options()}
print("options:", gcc_options(), flush=True)
copies = {name: torch.nn.Linear(576, 1536, bias=False).eval() for name in settings}  # a graph cache each
for copy in copies.values():
    copy.load_state_dict(linear.state_dict())
graphs = {name: torch.compile(copies[name], dynamic=True) for name in settings}


def call(name: str, x: torch.Tensor) -> torch.Tensor:
    with inductor_config.patch(settings[name]):
        return graphs[name](x)


def median_call(name: str, x: torch.Tensor, calls: int = 200) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call(name, x)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


with torch.inference_mode():
    for name in settings:
        call(name, torch.randn(3, 576))
    for rows in range(1, 10):
        x = torch.randn(rows, 576)
        difference = (call("with", x) - call("without", x)).abs().max().item()
        rounds: dict[str, list[float]] = {name: [] for name in settings}
        for _ in range(5):
            for name in settings:
                rounds[name].append(median_call(name, x))
        line = ", ".join(f"{name} {statistics.median(r):.1f} us" for name, r in rounds.items())
        print(f"{rows} rows: {line}, largest difference {difference:g}", flush=True)
