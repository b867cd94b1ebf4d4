"""Probe: an EAGLE-3 head call with its int8 linears called through fbgemm's op directly, against
``quantize_dynamic``'s modules (what ``int8:`` built before ``specdec.models.surgery.Int8Linear``).

Why: at one row the module's per-call dispatch (dtype and version checks, attribute lookups) was 25-45 µs
of a 60-270 µs call on the Cascade Lake Xeon in a microbenchmark, and a head call makes 8 of them. Checks
that the outputs are bitwise the module's, then times one-pair draft calls over a 400-pair cache (rolled
back after each), the two heads interleaved over 20 rounds of 30 calls. Run in the forty-third session
before ``Int8Linear`` landed (on later code both heads are the lean one), nothing else running:

    python benchmarks/campaigns/int8-dispatch-probe-2026-11-29.py

Seen: bitwise True True; module 3.33 / 4.27 ms (min / median), lean 3.18 / 4.02; paired median 0.19 ms.
"""

import importlib
import statistics
import sys
import time
import warnings

import torch

from specdec.drafters.factory import make_drafter
from specdec.engine import Engine
from specdec.models import load_model

sys.path.insert(0, "benchmarks/campaigns")
warnings.filterwarnings("ignore")
probe = importlib.import_module("head-opaque-compile-probe-2026-11-29")


class Lean(torch.nn.Module):
    def __init__(self, quantized):
        super().__init__()
        self.quantized, self.packed = quantized, quantized._packed_params._packed_params

    def forward(self, x):
        return torch.ops.quantized.linear_dynamic(x, self.packed, True).to(x.dtype)


def wrap(module):
    for name, child in list(module.named_children()):
        if isinstance(child, torch.ao.nn.quantized.dynamic.Linear):
            setattr(module, name, Lean(child))
        else:
            wrap(child)


def main():
    torch.set_num_threads(2)
    target = load_model("smollm2-135m")
    spec = "int8:tree-2:eagle3:smollm2-135m-eagle3"
    module, lean = (make_drafter(spec, target.model, target.tokenizer) for _ in range(2))
    engine = Engine(target.model, warm_up=False)
    ids = torch.randint(3, 40000, (400,), generator=torch.Generator().manual_seed(0)).tolist()
    engine.reset(1, 600)
    with torch.inference_mode():
        prefill = engine.prefill([ids], hidden_layers=module.target_hidden_layers)
    for drafter in (module, lean):
        drafter.attach(engine)
        drafter.begin([ids], prefill)
    wrap(lean.head)
    a, b = probe.call(module), probe.call(lean)
    print("bitwise", torch.equal(a.logits, b.logits), torch.equal(a.prenorm, b.prenorm))
    times: dict[str, list[float]] = {"module": [], "lean": []}
    for _ in range(20):
        for name, drafter in (("module", module), ("lean", lean)):
            start = time.perf_counter()
            for _ in range(30):
                probe.call(drafter)
            times[name].append((time.perf_counter() - start) / 30 * 1e3)
    for name, rounds in times.items():
        print(name, "min / median ms", round(min(rounds), 3), round(statistics.median(rounds), 3))
    paired = [x - y for x, y in zip(times["module"], times["lean"], strict=True)]
    print("paired median difference ms", round(statistics.median(paired), 3))


if __name__ == "__main__":
    main()
