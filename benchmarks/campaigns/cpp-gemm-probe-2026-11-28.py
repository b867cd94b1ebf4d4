"""Inductor's C++ GEMM template as a batch-invariant one-row linear: are a row's bits the same at M = 1, 2
and 6, and is one row as fast as MKL's?

CAMPAIGN next run 4's last candidate (oneDNN's packed kernel is invariant but loses to MKL at one row on
Intel Xeons). 30 linears of one SmolLM2 shape applied to one input (one per layer, so the weights
stream from memory as in a step) compiled as one graph with freezing and max-autotune restricted to the
CPP backend, one static graph per M; microseconds per linear, median of 20 passes, against MKL's
`F.linear` over the same 30 weights in the same process. Writes JSON.

    python benchmarks/campaigns/cpp-gemm-probe-2026-11-28.py \
        --out benchmarks/results/cpp_gemm_probe_2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch._inductor.config as inductor
import torch.nn.functional as F
from torch import nn

from specdec.benchmarks.report import machine_info

SHAPES = [(192, 576), (576, 576), (1536, 576)]
ROWS = (1, 2, 6)


LAYERS = 30


class _Layers(nn.Module):
    """``LAYERS`` linears of one shape, each applied to the same input."""

    def __init__(self, n: int, k: int):
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(k, n, bias=False) for _ in range(LAYERS))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [linear(x) for linear in self.linears]


def _us(fn, passes: int = 20) -> float:
    """Microseconds per linear of one pass of ``fn`` over the ``LAYERS`` weights."""
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(1e6 * statistics.median(times) / LAYERS, 1)


@torch.no_grad()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    inductor.freezing, inductor.max_autotune, inductor.max_autotune_gemm_backends = True, True, "CPP"
    torch.manual_seed(0)
    table = {}
    for n, k in SHAPES:
        layers, x = _Layers(n, k).eval(), torch.randn(max(ROWS), k)
        weights = [linear.weight for linear in layers.linears]
        outputs, row = {}, {}
        for m in ROWS:
            compiled = torch.compile(layers, dynamic=False)
            outputs[m] = compiled(x[:m])[0]
            rows = x[:m]
            row[f"compiled_us_M{m}"] = _us(lambda c=compiled, r=rows: c(r))
            row[f"mkl_us_M{m}"] = _us(lambda r=rows, ws=weights: [F.linear(r, w) for w in ws])
            torch._dynamo.reset()
        row["rows_identical_across_M"] = all(torch.equal(outputs[m], outputs[max(ROWS)][:m]) for m in ROWS)
        table[f"{n}x{k}"] = row
        print(f"{n}x{k}", row, flush=True)
    record = {"what": __doc__.splitlines()[0], "per_shape": table, "machine": machine_info()}
    args.out.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
