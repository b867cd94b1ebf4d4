"""Probe: a dynamic-int8 linear written in the decomposed pattern (choose_qparams -> quantize -> dequantize ->
linear, per-channel int8 weight), compiled with inductor freezing, against fbgemm's quantized::linear_dynamic
and the fp32 linear at one row, at the EAGLE-3 head's shapes. Why: dynamo breaks the graph at every fbgemm
linear, so the head cannot be compiled as it is; this is the pattern inductor's x86 pass lowers to oneDNN's
int8 ``qlinear_pointwise.tensor`` (checked with TORCH_LOGS=output_code: it does).

Run in the forty-first session on the Cascade Lake Xeon (2 cores, AVX-512 VNNI), nothing else running; each
line gives (min, median) microseconds a call over 7 rounds of 100:

    python benchmarks/campaigns/qlinear-compile-probe-2026-11-29.py \
        > benchmarks/results/qlinear_compile_probe_2026-11-29.log
"""

import statistics
import time
import warnings

import torch
import torch._inductor.config as inductor_config
import torch.ao.quantization.fx._decomposed  # registers the quantized_decomposed ops

warnings.filterwarnings("ignore")
inductor_config.freezing = True
decomposed = torch.ops.quantized_decomposed


def timeit(f, n=100, reps=7):
    for _ in range(5):
        f()
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            f()
        out.append((time.perf_counter() - start) / n * 1e6)
    return round(min(out), 1), round(statistics.median(out), 1)


class DecomposedLinear(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        scale = weight.abs().amax(1) / 127
        quantized = torch.clamp(torch.round(weight / scale[:, None]), -128, 127)
        self.register_buffer("wq", quantized.to(torch.int8))
        self.register_buffer("ws", scale)
        self.register_buffer("wz", torch.zeros(weight.shape[0], dtype=torch.int64))

    def forward(self, x):
        eps = torch.finfo(torch.float32).eps
        scale, zero = decomposed.choose_qparams.tensor(x, 0, 255, eps, torch.uint8)
        xq = decomposed.quantize_per_tensor.tensor(x, scale, zero, 0, 255, torch.uint8)
        xd = decomposed.dequantize_per_tensor.tensor(xq, scale, zero, 0, 255, torch.uint8)
        wd = decomposed.dequantize_per_channel(self.wq, self.ws, self.wz, 0, -128, 127, torch.int8)
        return torch.nn.functional.linear(xd, wd)


def measure(k: int, n: int) -> None:
    linear = torch.nn.Linear(k, n, bias=False)
    x = torch.randn(1, k)
    fbgemm = torch.ao.quantization.quantize_dynamic(
        torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8
    )
    started = time.time()
    with torch.no_grad():
        compiled = torch.compile(DecomposedLinear(linear.weight.detach()).eval())
        y, ref = compiled(x), x @ linear.weight.T
        print(
            k, n, "compile s", round(time.time() - started, 1),
            "err compiled", float((y - ref).abs().max()), "err fbgemm", float((fbgemm(x) - ref).abs().max()),
        )  # fmt: skip
        print(
            "   fbgemm dyn", timeit(lambda: fbgemm(x)), "compiled decomposed", timeit(lambda: compiled(x)),
            "fp32", timeit(lambda: linear(x)),
        )  # fmt: skip


for k, n in ((576, 3072), (3072, 576), (1152, 576)):
    measure(k, n)
