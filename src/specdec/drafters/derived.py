"""Drafts derived from the target itself, for targets that have no small sibling model.

Both share the target's tokenizer by construction. A reduced-precision copy agrees with the target
on almost every token but is only cheaper where its kernels are; a truncated copy (the first
layers plus the shared head) is much cheaper but, untrained, agrees far less often.
"""

from __future__ import annotations

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.model import ModelDrafter
from specdec.models.surgery import reduced_precision_copy, truncated_copy


class ReducedPrecisionDrafter(ModelDrafter):
    """The target itself in int8 / bf16 / fp16."""

    def __init__(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, precision: str):
        # bf16 is packed where oneDNN has bf16 kernels (Engine's default); int8 and fp16 run as they are.
        super().__init__(reduced_precision_copy(target, precision), tokenizer, name=precision)


class TruncatedDrafter(ModelDrafter):
    """The target's first layers as a draft (untrained baseline; ``specdec train draft`` trains it)."""

    def __init__(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, num_layers: int):
        super().__init__(truncated_copy(target, num_layers), tokenizer, name=f"first-{num_layers}-layers")
