"""Probe: one-row linears at the EAGLE-3 head's shapes, by kernel: fbgemm's dynamic int8 through
``quantize_dynamic``'s module and through its op directly, MKL fp32 (``F.linear`` on the unpacked weight),
and ``torch._weight_int8pack_mm`` (weight-only int8, fp32 activations); a no-op ``add`` for the floor.

Why: a head call spent ~180 µs per int8 linear on the Cascade Lake Xeon, against a memory floor of ~10-60 µs
for its weights. Weights are hot in cache here (a head's chain of draft calls re-reads them; a target step
between chains evicts them). Minimum µs a call over 5 rounds of 300, 2 threads, then 1:

    python benchmarks/campaigns/int8-linear-one-row-probe-2026-11-29.py \
        > benchmarks/results/int8_linear_one_row_probe_2026-11-29.log
"""

import time
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
SHAPES = [(1152, 576), (1152, 192), (576, 576), (576, 3072), (3072, 576), (576, 8499)]


def best(f, n=300, reps=5) -> float:
    for _ in range(20):
        f()
    rounds = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            f()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return round(min(rounds), 1)


def kernels(k: int, n: int) -> dict:
    linear = torch.nn.Linear(k, n, bias=False)
    module = torch.ao.quantization.quantize_dynamic(
        torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8
    )[0]
    packed = module._packed_params._packed_params
    weight = linear.weight.detach()
    scales = weight.abs().amax(1) / 127
    weight_int8 = torch.round(weight / scales[:, None]).clamp(-128, 127).to(torch.int8).contiguous()
    x = torch.randn(1, k)
    with torch.inference_mode():
        return {
            "fbgemm module": best(lambda: module(x)),
            "fbgemm op": best(lambda: torch.ops.quantized.linear_dynamic(x, packed, True)),
            "mkl fp32": best(lambda: F.linear(x, weight)),
            "int8pack_mm": best(lambda: torch._weight_int8pack_mm(x, weight_int8, scales)),
            "no-op add": best(lambda: x.add(1)),
        }


def main():
    for threads in (2, 1):
        torch.set_num_threads(threads)
        for k, n in SHAPES:
            print(f"threads {threads} {k}->{n}", kernels(k, n), flush=True)


if __name__ == "__main__":
    main()
