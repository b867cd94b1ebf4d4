"""How an engine's static steps go through ``torch.compile``: on a CPU, with inductor's own C++ GEMM kernels.

On a CPU the eager engine's linears are oneDNN kernels on prepacked weights (:mod:`specdec.engine.kernels`):
the same bits for a row whatever the batch, but at one row, which is every one-token step, oneDNN's kernel
is the slow one on Intel Xeons (95 against MKL's 35 µs for SmolLM2's key projection on a Cascade Lake,
``benchmarks/campaigns/linear-call-probe-2026-11-28.py``). Inductor's C++ GEMM template, chosen by
max-autotune on weights frozen into the graph as constants (prepacked at compile time), is as fast as MKL
at one row and faster than oneDNN at a few: SmolLM2's one-token step 38 against 72 ms on that machine,
a six-token block 49 against 72 (``benchmarks/campaigns/cpp-engine-probe-2026-11-28.py``).

Its graphs give a row the same logits as the eager engine to fp32 rounding, not bit for bit, and a row
computed alone or beside others may differ in the last bits too: the graph for one row and the graph for
several fuse some operations differently (SiLU as ``x / (1 + e^-x)`` in one, ``x · 1 / (1 + e^-x)`` in
the other). The eager engine is the bitwise batch-invariant one (``docs/correctness.md``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch._inductor.config as inductor_config
from torch import nn

# Inductor settings for a CPU step: weights as constants (freezing: what lets the GEMM template prepack
# them), GEMMs from the C++ template only (no timing against MKL, whose choice would vary between runs),
# each product's reduction over K in one thread (no K-slicing: a row's sum in one order at any M).
CPU_STEP_OPTIONS = {
    "freezing": True,
    "max_autotune": True,
    "max_autotune_gemm_backends": "CPP",
    "cpp.gemm_max_k_slices": 1,
}


def compile_step(model: nn.Module, device: torch.device) -> Callable:
    """``model`` under ``torch.compile`` with symbolic sizes; on a CPU with :data:`CPU_STEP_OPTIONS`.

    Those options are set around every call rather than passed to ``torch.compile(options=...)``: there
    ``freezing`` does not reach the compiler (torch 2.13), the weights stay graph inputs and the GEMM
    template, which wants constant weights, has nothing to choose from. A graph compiles inside the call
    that first meets its shapes, so every call carries them; the settings are left as they were after it.
    Freezing bakes the weights in: changing the model's weights afterwards does not reach its graphs.
    """
    compiled = torch.compile(model, dynamic=True)
    if device.type != "cpu":
        return compiled

    def step(*args, **kwargs):
        with inductor_config.patch(CPU_STEP_OPTIONS):
            return compiled(*args, **kwargs)

    return step
