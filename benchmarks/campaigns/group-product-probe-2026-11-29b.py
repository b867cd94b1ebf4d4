"""Probe: what the grouped linears' bookkeeping costs a one-token step, before and after it moved off
``nn.Module`` attributes (forty-fifth session). ``SharedInputLinears.take`` kept its product and input as
module attributes, each write through ``nn.Module.__setattr__`` (~1 µs), ~300 a SmolLM2 forward; now they
live on a plain object. Here the engine's groups take turns between that old ``take`` (re-created below, in
this probe only) and the library's, step by step: one row, a 300-token context, one-token steps and 5-token
blocks rolled back after each, 9 rounds of 40 calls a variant, the median per round. Run with the machine to
itself:

    python benchmarks/campaigns/group-product-probe-2026-11-29b.py
"""

import statistics

import torch

from specdec.benchmarks.step_timing import primed_token, timed_steps
from specdec.engine import Engine
from specdec.engine.kernels import SharedInputLinears
from specdec.models import load_model


def module_attribute_take(self, x: torch.Tensor, member: int) -> torch.Tensor:
    """The take of 43429ea and before: the same logic, its state written as module attributes."""
    start, stop = self.bounds[member]
    if x is not getattr(self, "_input", None) or member not in getattr(self, "_untaken", set()):
        self._input, self._output = x, self.kernel(x)
        self._untaken = set(range(len(self.bounds)))
    output = self._output
    self._untaken.discard(member)
    if not self._untaken:
        self._input = self._output = None
    return output[..., start:stop]


library_take = SharedInputLinears.take
target = load_model("smollm2-135m")
engine = Engine(target.model)
primed_token(engine, 300, 80)
vocab = target.model.get_input_embeddings().weight.shape[0]
generator = torch.Generator().manual_seed(1)
results: dict[tuple[str, int], list[float]] = {}
with torch.inference_mode():
    for _ in range(9):
        for name, take in (("module attributes", module_attribute_take), ("plain object", library_take)):
            SharedInputLinears.take = take
            for n in (1, 5):
                block = torch.randint(3, vocab, (1, n), generator=generator)
                times = timed_steps(engine, block, 40)
                results.setdefault((name, n), []).append(statistics.median(times[2:]))
SharedInputLinears.take = library_take
for (name, n), rounds in results.items():
    print(
        f"{name}, {n}-token call: median {statistics.median(rounds) * 1000:.2f} ms, rounds min "
        f"{min(rounds) * 1000:.2f} max {max(rounds) * 1000:.2f}"
    )
