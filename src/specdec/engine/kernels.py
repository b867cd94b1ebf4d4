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

import itertools
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from specdec.engine.modeling import shallow_copy

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


@dataclass
class _Product:
    """A group's last product, its input, and the members yet to take their slices. A plain object, not
    attributes of the module: ``nn.Module.__setattr__`` costs ~1 µs a write, and the ~150 members a
    SmolLM2 forward calls made ~300 of them (~0.3 ms a step; measured in
    ``benchmarks/campaigns/group-product-probe-2026-11-29b.py``)."""

    input: torch.Tensor | None = None
    output: torch.Tensor | None = None
    untaken: set[int] = field(default_factory=set)


class SharedInputLinears(nn.Module):
    """Sibling linear layers that read one input (an attention's q/k/v projections, an MLP's gate and
    up), packed as one weight: one kernel call where there were two or three.

    Each oneDNN call spends ~30 µs around its kernel (a SmolLM2 step makes 211 calls; grouped, 121:
    about 2 % of a step on a Cascade Lake Xeon, ``benchmarks/CAMPAIGN.md``). Members
    (:class:`SharedInputMember`) take their slices of one product. The group computes it when a member
    meets an input the group has not computed (by identity) or has already given that member, and
    forgets it once every member has taken its slice: whatever order a model calls them in, a member
    only ever gets its own slice of its own input's product, so rows stay batch-invariant as in
    :class:`PackedLinear`.
    """

    def __init__(self, linears: Sequence[nn.Linear]):
        super().__init__()
        weight = torch.cat([linear.weight.detach() for linear in linears])
        fused = nn.Linear(weight.shape[1], weight.shape[0], bias=linears[0].bias is not None, device="meta")
        fused.weight = nn.Parameter(weight, requires_grad=False)
        if fused.bias is not None:
            bias = torch.cat([linear.bias.detach() for linear in linears])
            fused.bias = nn.Parameter(bias, requires_grad=False)
        self.kernel = PackedLinear(fused)
        ends = list(itertools.accumulate(linear.out_features for linear in linears))
        self.bounds = list(zip([0, *ends[:-1]], ends, strict=True))
        self.product = _Product()

    def take(self, x: torch.Tensor, member: int) -> torch.Tensor:
        """Member ``member``'s output on ``x``: its slice of the group's product."""
        start, stop = self.bounds[member]
        product = self.product
        if x is not product.input or member not in product.untaken:
            product.input, product.output = x, self.kernel(x)
            product.untaken = set(range(len(self.bounds)))
        output = product.output
        product.untaken.discard(member)
        if not product.untaken:  # every member served: hold no tensor between forwards
            product.input = product.output = None
        return output[..., start:stop]


class SharedInputMember(nn.Module):
    """Inference-only replacement for one ``nn.Linear`` of a :class:`SharedInputLinears` group."""

    def __init__(self, group: SharedInputLinears, index: int):
        super().__init__()
        self.group, self.index = group, index
        start, stop = group.bounds[index]
        self.in_features, self.out_features = group.kernel.in_features, stop - start

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.group.take(x, self.index)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, group member {self.index}"


def shared_input_groups(model: nn.Module, example: Callable[[nn.Module], object]) -> list[list[str]]:
    """Names of sibling ``nn.Linear`` layers that read the same tensor when ``example(model)`` runs,
    in groups of two or more of one dtype and bias layout. Layers called more than once stay apart."""
    inputs: dict[str, list[torch.Tensor]] = defaultdict(list)
    linears = {name: m for name, m in model.named_modules() if type(m) is nn.Linear}
    hooks = [
        module.register_forward_pre_hook(lambda _, args, name=name: inputs[name].extend(args[:1]))
        for name, module in linears.items()
    ]
    try:
        with torch.inference_mode():
            example(model)
    finally:
        for hook in hooks:
            hook.remove()
    groups: dict[tuple, list[str]] = defaultdict(list)
    for name, seen in inputs.items():  # ``seen`` holds each input alive: their ids are distinct
        if len(seen) == 1:
            linear = linears[name]
            layout = (linear.weight.dtype, linear.bias is None)
            groups[(name.rpartition(".")[0], id(seen[0]), layout)].append(name)
    return [names for names in groups.values() if len(names) > 1]


def two_token_forward(model: nn.Module) -> object:
    """A causal LM's forward on two tokens, without a cache: the example :func:`pack_linear_layers`
    finds a model's shared-input layers with."""
    device = next(model.parameters()).device
    return model(input_ids=torch.zeros(1, 2, dtype=torch.long, device=device), use_cache=False)


def pack_linear_layers(model: nn.Module, example: Callable[[nn.Module], object] | None = None) -> nn.Module:
    """Return a copy of ``model`` whose ``nn.Linear`` layers are :class:`PackedLinear`; with an
    ``example`` forward (a callable given the copy), sibling layers that read one input in it are
    packed together (:class:`SharedInputLinears`).

    The copy shares every parameter with the original (no weight is duplicated except into the
    packed buffers), so the original keeps working, e.g. as the HF baseline in benchmarks.
    """
    packed = shallow_copy(model)
    groups = shared_input_groups(packed, example) if example is not None else []
    with torch.no_grad():
        for names in groups:
            group = SharedInputLinears([packed.get_submodule(name) for name in names])
            for index, name in enumerate(names):
                packed.set_submodule(name, SharedInputMember(group, index))
        for name, module in list(packed.named_modules()):
            if type(module) is nn.Linear:
                packed.set_submodule(name, PackedLinear(module))
    return packed
