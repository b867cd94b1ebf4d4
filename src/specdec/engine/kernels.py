"""Batch-invariant, prepacked fp32 / bf16 linear layers for CPU inference.

On CPU, MKL's default GEMM is slow for the 2-8 row inputs that speculative verification feeds
(it repacks the weight on every call), and its result for a given row depends on how many rows
are in the batch, so a verify pass and a one-token pass can disagree in the last bits and flip a
near-tie. oneDNN's prepacked linear (the kernel inductor uses under ``freezing``) packs the
weight once, is up to 3x faster for small M, and computes each row identically whatever M is (a lone
row as a pair where its own kernel would differ: :func:`_lone_row_differs`).
We swap modules on a *copy* of the model, the same way quantizers replace ``nn.Linear``; the
user's model and transformers' code stay untouched.

bf16 weights are packed too where oneDNN computes bf16 on this CPU (AVX-512 BF16 / AMX, or AVX-512
emulation): half the bytes per step, which is what a memory-bound decode step costs. Reduced precision
is never a silent default: a draft in bf16 (``bf16:MODEL``) changes only how often it is accepted, a
bf16 target is the user's choice of target (``--dtype bfloat16``).
"""

from __future__ import annotations

import copy
import itertools
import weakref

import torch
from torch import nn

# The M the packed layout is tuned for: the verify width of a typical γ (≈5) speculative step.
_PACK_HINT = 6


def packing_supported(model: nn.Module) -> bool:
    """Packing needs weights on CPU with oneDNN available: fp32 anywhere, bf16 where oneDNN has bf16
    kernels for this CPU (on an AVX2-only CPU bf16 would be emulated far slower than fp32)."""
    param = next(model.parameters(), None)
    if param is None or param.device.type != "cpu":
        return False
    if not (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")):
        return False
    if param.dtype == torch.bfloat16:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return param.dtype == torch.float32


# Packed layers by handle, for the compiled path: torch.compile cannot trace a oneDNN-packed weight
# (an opaque tensor with no storage), so a compiled graph calls the kernel through a custom op that
# names its layer by an int. Weak values: a discarded model frees its layers as usual.
_LAYERS: weakref.WeakValueDictionary[int, PackedLinear] = weakref.WeakValueDictionary()
_HANDLES = itertools.count()


def _packed_matmul(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _as_pair(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """A lone row computed inside a block of two, so it gets the block's kernel."""
    pair = x.reshape(1, -1).expand(2, -1).contiguous()
    out = _packed_matmul(pair, weight, bias)
    return out[:1].reshape(*x.shape[:-1], out.shape[-1])


def _lone_row_differs(
    weight: torch.Tensor, bias: torch.Tensor | None, in_features: int, dtype: torch.dtype
) -> bool:
    """Whether oneDNN computes a lone row (M = 1) by another kernel than the same row in a block.

    oneDNN computes every row of a block identically whatever the block's size, but M = 1 may take a
    kernel of its own: on an AMX Xeon it did for more than 1,024 inputs (SmolLM2's MLP), so a one-token
    step and a verify block differed in the last bits. Another kernel gives other bits on any input,
    so one random probe tells. Where it differs the layer computes lone rows as pairs (~4 % of a
    SmolLM2 step there, where all layers as pairs cost ~12 %)."""
    probe = torch.randn(2, in_features, generator=torch.Generator().manual_seed(0)).to(dtype)
    return not torch.equal(_packed_matmul(probe[:1], weight, bias), _packed_matmul(probe, weight, bias)[:1])


@torch.library.custom_op("specdec::packed_linear", mutates_args=())
def packed_linear(x: torch.Tensor, handle: int) -> torch.Tensor:
    """The packed layer ``handle`` applied to ``x``: one opaque op inside a compiled graph."""
    return _LAYERS[handle].compute(x)


@packed_linear.register_fake
def _(x: torch.Tensor, handle: int) -> torch.Tensor:
    return x.new_empty(*x.shape[:-1], _LAYERS[handle].out_features)


class PackedLinear(nn.Module):
    """Inference-only replacement for ``nn.Linear`` holding a oneDNN-prepacked weight."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        weight = linear.weight.detach()
        self.register_buffer("packed_weight", torch.ops.mkldnn._reorder_linear_weight(weight, _PACK_HINT))
        bias = None if linear.bias is None else linear.bias.detach().clone()
        self.register_buffer("bias", bias)
        self.lone_as_pair = _lone_row_differs(self.packed_weight, self.bias, self.in_features, weight.dtype)
        self.handle = next(_HANDLES)
        _LAYERS[self.handle] = self

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        """The layer on ``x``, each row computed by the kernel a block of rows gets."""
        if self.lone_as_pair and x.numel() == x.shape[-1]:
            return _as_pair(x, self.packed_weight, self.bias)
        return _packed_matmul(x, self.packed_weight, self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():  # the same kernel, seen by the compiler as one opaque op
            return packed_linear(x, self.handle)
        return self.compute(x)

    def extra_repr(self) -> str:
        pairs = ", lone rows as pairs" if self.lone_as_pair else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, packed=oneDNN{pairs}"


def pack_linear_layers(model: nn.Module) -> nn.Module:
    """Return a copy of ``model`` whose ``nn.Linear`` layers are :class:`PackedLinear`.

    The copy shares every parameter with the original (no weight is duplicated except into the
    packed buffers), so the original keeps working, e.g. as the HF baseline in benchmarks.
    """
    shared = {id(p): p for p in model.parameters()} | {id(b): b for b in model.buffers()}
    packed = copy.deepcopy(model, memo=shared)
    with torch.no_grad():
        for name, module in list(packed.named_modules()):
            if type(module) is nn.Linear:
                packed.set_submodule(name, PackedLinear(module))
    return packed
