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

import functools
import shutil
import subprocess
from collections.abc import Callable

import torch
import torch._inductor.config as inductor_config
from torch import nn

# Inductor settings for a CPU step: weights as constants (freezing: what lets the GEMM template prepack
# them), GEMMs from the C++ template only (no timing against MKL, whose choice would vary between runs),
# each product's reduction over K in one thread (no K-slicing: a row's sum in one order at any M), and
# the graph's kernels called from C++ rather than from generated Python (~460 tensor views and ~100 kernel
# calls a SmolLM2 step, ~0.7 ms of Python: a one-token step 5-7 % faster, a 5-token block 4-6 %, in four
# pairs of processes on an AVX-512 EPYC; an engine's two graphs build ~55 s longer on 2 cores).
CPU_STEP_OPTIONS = {
    "freezing": True,
    "max_autotune": True,
    "max_autotune_gemm_backends": "CPP",
    "cpp.gemm_max_k_slices": 1,
    "cpp_wrapper": True,
}

# GCC options that let a GEMM micro-kernel of more than four rows keep its accumulators in registers.
# The kernel holds them in one array of rows x 3 AVX-512 vectors, zeroed by a loop: GCC turns that loop
# into a call to memset (loop distribution) or, past 16 elements, leaves it a loop (complete peeling
# stops at 16), and either way the array stays in memory: every k step stores all its accumulators to
# the stack. Kernels of up to four rows are inlined into their caller and escape it; five and more are
# not. Measured on an AVX-512 EPYC: SmolLM2's 576 -> 1536 projection at 5-8 rows 100-131 -> 70-80 us a
# call, one to four rows 63-71 us either way (``benchmarks/campaigns/gemm-rows-probe-2026-11-29.py``);
# SmolLM2's compiled 5-token verify block 1.51 -> 1.21 one-token steps, 8 tokens 1.70 -> 1.51
# (``compiled-gcc-options-probe-2026-11-29.py``). The options change which loops are unrolled, not the
# arithmetic: every product keeps its bits.
GCC_REGISTER_OPTIONS = "-fno-tree-loop-distribute-patterns --param=max-completely-peel-times=32"


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
    options = CPU_STEP_OPTIONS | gcc_options()

    def step(*args, **kwargs):
        with inductor_config.patch(options):
            return compiled(*args, **kwargs)

    return step


def gcc_options() -> dict[str, str]:
    """:data:`GCC_REGISTER_OPTIONS` as inductor settings where its C++ compiler is GCC, else none.

    Inductor has no setting for extra compiler options; its ``cpp.march`` value is written into the
    command line as ``-march=<value>`` and the line is split like a shell's, so the options ride behind
    the architecture it would have used (``native`` unless the user set one). Clang, which does not know
    GCC's ``--param`` names, and an architecture flag switched off (``""``) get nothing."""
    march, cxx = inductor_config.cpp.march, inductor_config.cpp.cxx
    compiler = cxx[-1] if isinstance(cxx, (tuple, list)) else cxx
    if march == "" or not compiler or not _is_gcc(compiler):
        return {}
    return {"cpp.march": f"{march or 'native'} {GCC_REGISTER_OPTIONS}"}


@functools.cache
def _is_gcc(compiler: str) -> bool:
    """Whether ``compiler`` (a name on the PATH or a path) says it is GCC's C++ compiler."""
    path = shutil.which(compiler)
    if path is None:
        return False
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "clang" not in version.lower() and ("g++" in version or "GCC" in version)
