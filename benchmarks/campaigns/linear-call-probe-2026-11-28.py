"""What one linear call costs at SmolLM2's shapes: MKL's GEMM against oneDNN's prepacked kernel, and
oneDNN's cost outside its kernel.

Why: our plain decoding runs 0.78x HF `generate` on the Cascade Lake Xeon (HF_HEADLINE_2026-11-28_1548.md)
and the step's packed linears are most of the gap (pack_probe_2026-11-28.json). For each weight shape of
a SmolLM2 layer (and the q/k/v and gate/up shapes packed as one), 30 copies (one per layer: the
weights stream from memory as in a step, not from cache) are applied in turn to M rows, median of REPS
passes, in microseconds a call. `tiny_call_us` times a 16x16 weight (cache-resident), whose kernel is a
few microseconds: the rest is the call's own cost.

    python benchmarks/campaigns/linear-call-probe-2026-11-28.py \
        --out benchmarks/results/linear_call_probe_2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from specdec.benchmarks.report import machine_info

SHAPES = {"q/o": (576, 576), "k/v": (192, 576), "gate/up": (1536, 576), "down": (576, 1536)}
SHAPES |= {"q+k+v": (960, 576), "gate+up": (3072, 576)}
LAYERS = 30


def _packed(weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight, 6)


def _onednn(x: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")


def _us_per_call(fn, x: torch.Tensor, weights: list[torch.Tensor], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for weight in weights:
            fn(x, weight)
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times) / len(weights)


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--rows", default="1,6")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    generator = torch.Generator().manual_seed(0)
    table: dict[str, dict[str, float]] = {}
    for label, (n, k) in SHAPES.items():
        weights = [torch.randn(n, k, generator=generator) / k**0.5 for _ in range(LAYERS)]
        packed = [_packed(w) for w in weights]
        for rows in map(int, args.rows.split(",")):
            x = torch.randn(rows, k, generator=generator)
            table[f"{label} {n}x{k}, M={rows}"] = {
                "mkl_us": round(_us_per_call(F.linear, x, weights, args.reps), 1),
                "onednn_packed_us": round(_us_per_call(_onednn, x, packed, args.reps), 1),
            }
    tiny, x = torch.randn(16, 16, generator=generator), torch.randn(1, 16, generator=generator)
    tiny_call_us = {
        "mkl_us": round(_us_per_call(F.linear, x, [tiny] * 2000, 3), 1),
        "onednn_packed_us": round(_us_per_call(_onednn, x, [_packed(tiny)] * 2000, 3), 1),
    }
    record = {
        "what": __doc__.splitlines()[0],
        "per_call": table,
        "tiny_call_us": tiny_call_us,
        "torch_threads": torch.get_num_threads(),
        "machine": machine_info(),
    }
    args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(table | {"16x16, M=1": tiny_call_us}, indent=1))


if __name__ == "__main__":
    main()
