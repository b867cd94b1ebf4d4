"""Drafts derived from the target itself, for targets that have no small sibling model.

Both share the target's tokenizer by construction. A reduced-precision copy agrees with the target
on almost every token but is only cheaper where its kernels are; a truncated copy (the first
layers plus the shared head) is much cheaper but, untrained, agrees far less often.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.model import ModelDrafter
from specdec.errors import InvalidArgumentError

PRECISIONS = ("int8", "bf16", "fp16")


def _shallow_copy(model: PreTrainedModel) -> PreTrainedModel:
    """A structural copy sharing every tensor, so converting it leaves the target untouched."""
    shared = {id(t): t for t in [*model.parameters(), *model.buffers()]}
    return copy.deepcopy(model, memo=shared)


def reduced_precision_copy(model: PreTrainedModel, precision: str) -> PreTrainedModel:
    if precision not in PRECISIONS:
        raise InvalidArgumentError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "int8":
        # Dynamic int8: weights stored as int8, activations quantised per call (fbgemm on x86).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.ao.quantization.quantize_dynamic(
                _shallow_copy(model), {nn.Linear}, dtype=torch.qint8, inplace=True
            )
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return copy.deepcopy(model).to(dtype)


def check_truncation(model: PreTrainedModel, num_layers: int) -> None:
    """A truncated model keeps at least one layer and drops at least one."""
    total = model.config.num_hidden_layers
    if not 1 <= num_layers < total:
        raise InvalidArgumentError(f"num_layers must be in [1, {total - 1}], got {num_layers}")


def truncated_copy(model: PreTrainedModel, num_layers: int) -> PreTrainedModel:
    """The first ``num_layers`` decoder layers with the target's embeddings, final norm and head."""
    check_truncation(model, num_layers)
    draft = _shallow_copy(model)  # the copy gets its own config object, edited below
    layers = decoder_layers(draft)
    del layers[num_layers:]
    draft.config.num_hidden_layers = num_layers
    if getattr(draft.config, "layer_types", None):
        draft.config.layer_types = draft.config.layer_types[:num_layers]
    return draft


def decoder_layers(model: PreTrainedModel) -> nn.ModuleList:
    """The model's stack of decoder layers, whatever its architecture names it."""
    base = model.base_model
    for name in ("layers", "h", "blocks"):
        layers = getattr(base, name, None)
        if isinstance(layers, nn.ModuleList):
            return layers
    raise InvalidArgumentError(f"cannot find the decoder layers of {type(model).__name__}")


class ReducedPrecisionDrafter(ModelDrafter):
    """The target itself in int8 / bf16 / fp16."""

    def __init__(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, precision: str):
        super().__init__(
            reduced_precision_copy(target, precision), tokenizer, pack_weights=False, name=precision
        )


class TruncatedDrafter(ModelDrafter):
    """The target's first layers as a draft (untrained baseline; issue-3 drafts train it)."""

    def __init__(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, num_layers: int):
        super().__init__(truncated_copy(target, num_layers), tokenizer, name=f"first-{num_layers}-layers")
