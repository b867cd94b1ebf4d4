"""Probe: the whole EAGLE-3 head compiled (inductor, freezing, dynamic shapes) with its linears in the
decomposed dynamic-int8 pattern that inductor lowers to oneDNN's ``qlinear_pointwise.tensor``, against the
eager head on fbgemm's int8 linears (``int8:``, what the default drafter runs): one-pair draft calls over a
400-pair cache, rolled back after each, then 50 pairs later (a dynamic graph must not recompile per context
length).

Why: a head call is ~1.5 ms of int8 linears and ~100 small ops at 20-40 µs each on the Cascade Lake Xeon, and
dynamo breaks the graph at every fbgemm linear, so this pattern is the one way to compile the head whole.
Run in the forty-first session on that Xeon, nothing else running; (min, median) ms a call over 7 rounds
of 30:

    python benchmarks/campaigns/head-compile-probe-2026-11-29.py \
        > benchmarks/results/head_compile_probe_2026-11-29.log
"""

import statistics
import time
import warnings

import torch
import torch._inductor.config as inductor_config
import torch.ao.quantization.fx._decomposed  # registers the quantized_decomposed ops

from specdec.drafters.factory import make_drafter
from specdec.engine import Engine
from specdec.models import load_model

warnings.filterwarnings("ignore")
decomposed = torch.ops.quantized_decomposed


class DecomposedLinear(torch.nn.Module):
    """Per-channel int8 weight, activation quantised per call: the pattern inductor's x86 pass lowers."""

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


def swap(module):
    for name, child in list(module.named_children()):
        if type(child) is torch.nn.Linear:
            setattr(module, name, DecomposedLinear(child.weight.detach()))
        else:
            swap(child)


def call(drafter, ones):
    with torch.inference_mode():
        out = drafter._run(torch.tensor([[5]]), drafter._tail_feature[:, None], ones, drafter.cache)
        drafter.cache.rollback(ones)
    return out


def timeit(f, n=30, reps=7):
    for _ in range(5):
        f()
    rounds = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            f()
        rounds.append((time.perf_counter() - start) / n * 1e3)
    return round(min(rounds), 3), round(statistics.median(rounds), 3)


def compare(fbgemm, compiled, ones):
    eager = timeit(lambda: call(fbgemm, ones))
    print("eager fbgemm ms", eager, "compiled ms", timeit(lambda: call(compiled, ones)))


def main():
    target = load_model("smollm2-135m")
    fbgemm = make_drafter("int8:tree-2:eagle3:smollm2-135m-eagle3", target.model, target.tokenizer)
    compiled = make_drafter("tree-2:eagle3:smollm2-135m-eagle3", target.model, target.tokenizer)
    engine = Engine(target.model, warm_up=False)
    ids = torch.randint(3, 40000, (400,), generator=torch.Generator().manual_seed(0)).tolist()
    engine.reset(1, 600)
    with torch.inference_mode():
        prefill = engine.prefill([ids], hidden_layers=fbgemm.target_hidden_layers)
    for drafter in (fbgemm, compiled):
        drafter.attach(engine)
        drafter.begin([ids], prefill)
    swap(compiled.head)
    inductor_config.freezing = True
    compiled.head = torch.compile(compiled.head, dynamic=True)
    ones = torch.ones(1, dtype=torch.long)
    start = time.time()
    a, b = call(fbgemm, ones), call(compiled, ones)
    print("first compiled call s", round(time.time() - start, 1))
    same = bool((a.logits.argmax(-1) == b.logits.argmax(-1)).all())
    print("same argmax", same, "max logit diff", float((a.logits - b.logits).abs().max()))
    for _ in range(2):
        compare(fbgemm, compiled, ones)
    for drafter in (fbgemm, compiled):
        with torch.inference_mode():
            for _ in range(50):
                drafter._run(torch.tensor([[5]]), drafter._tail_feature[:, None], ones, drafter.cache)
    start = time.time()
    call(compiled, ones)
    print("50 pairs later, one compiled call s", round(time.time() - start, 3))
    compare(fbgemm, compiled, ones)


if __name__ == "__main__":
    main()
