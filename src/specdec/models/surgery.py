"""Structural copies of a model: truncated to its first layers, or in a lower precision.

Every copy shares the tensors it does not change with the original, so deriving a draft from a
135M-parameter target costs no memory for the shared embeddings and layers, and the original is
never modified (its config included).
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
from transformers import PreTrainedModel

from specdec.engine.modeling import decoder_layers, shallow_copy
from specdec.errors import InvalidArgumentError

PRECISIONS = ("int8", "bf16", "fp16")


class Int8Linear(nn.Module):
    """A dynamically quantised linear (``quantize_dynamic``'s module, fbgemm on x86) calling its kernel
    directly: the same op on the same packed weight, bit for bit.

    What goes is the module's per-call dispatch (its dtype and version checks, two module attribute
    lookups): 15-45 µs of a 40-300 µs one-row call on a Cascade Lake Xeon, and a draft step makes 8-15
    such calls (an EAGLE-3 head call 0.19 ms faster, ``benchmarks/CAMPAIGN.md``, forty-third session).
    The quantised module stays inside (``quantized``): its weights, state dict and repr are as before."""

    def __init__(self, quantized: DynamicLinear):
        super().__init__()
        if quantized._packed_params.dtype != torch.qint8:
            raise InvalidArgumentError(
                f"an Int8Linear wraps a qint8 linear, not {quantized._packed_params.dtype}"
            )
        self.quantized = quantized
        self.in_features, self.out_features = quantized.in_features, quantized.out_features
        self._packed = quantized._packed_params._packed_params
        self._reduce_range = quantized.version is not None and quantized.version >= 4  # as its forward passes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic(x, self._packed, self._reduce_range).to(x.dtype)


def check_truncation(model: PreTrainedModel, num_layers: int) -> None:
    """A truncated model keeps at least one layer and drops at least one."""
    total = model.config.num_hidden_layers
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or not 1 <= num_layers < total:
        raise InvalidArgumentError(f"num_layers must be an integer in [1, {total - 1}], got {num_layers!r}")


def truncated_copy(model: PreTrainedModel, num_layers: int) -> PreTrainedModel:
    """The first ``num_layers`` decoder layers with the model's embeddings, final norm and head."""
    check_truncation(model, num_layers)
    short = shallow_copy(model)  # the copy gets its own config object, edited below
    del decoder_layers(short)[num_layers:]
    short.config.num_hidden_layers = num_layers
    if getattr(short.config, "layer_types", None):
        short.config.layer_types = short.config.layer_types[:num_layers]
    return short


def reduced_precision_copy(
    model: PreTrainedModel, precision: str, keep: tuple[str, ...] = ()
) -> PreTrainedModel:
    """The model in int8 (dynamic quantisation of its linears, but those named in ``keep``), bf16 or fp16.

    Dynamic int8 quantises a linear's input with one scale per call: an input with a few huge channels
    (a target's raw hidden states, whose massive activations reach hundreds) leaves the other channels
    a handful of levels, so such a linear stays in full precision (``keep``)."""
    if precision not in PRECISIONS:
        raise InvalidArgumentError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "int8":
        copied = shallow_copy(model)
        names = {name for name, module in copied.named_modules() if isinstance(module, nn.Linear)}
        # Dynamic int8: weights stored as int8, activations quantised per call (fbgemm on x86).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantized = torch.ao.quantization.quantize_dynamic(
                copied, names - set(keep), dtype=torch.qint8, inplace=True
            )
        for name, module in list(quantized.named_modules()):
            if isinstance(module, DynamicLinear):
                quantized.set_submodule(name, Int8Linear(module))
        return quantized
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return copy.deepcopy(model).to(dtype)
