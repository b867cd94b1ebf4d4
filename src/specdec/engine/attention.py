"""Grouped-query attention for blocks of several tokens without copying the keys and values per head.

transformers' SDPA attention packs a one-token step's query heads onto their key/value heads, but for a
block of several tokens with a mask it first repeats every key/value head for each query head it serves
(``repeat_kv``): a copy of the whole cached context per layer per call. On a CPU that copy is what makes a
verify block dearer than a one-token step — on the reference machine a 2-token block cost 17-21 % over
a step at one row, and 8.5× a step at 64 rows of 300 tokens (2026-11-26), where it was two thirds of
the call. This attention puts each group's query heads one after another along the query axis instead, so
the kernel reads each key/value head in place, with the mask repeated for each head of a group.

Registered with transformers' ``AttentionInterface`` as ``specdec_sdpa``; the engine selects it on its own
copy of a model (never on the user's model), and anything it does not handle (a mask per head, soft-
capping, position biases) goes to transformers' own SDPA attention unchanged.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AttentionInterface, PretrainedConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from specdec.engine.modeling import shallow_copy
from specdec.engine.ragged import RaggedPlan, plan_for, ragged_attention

NAME = "specdec_sdpa"


def grouped_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float | None = None,
    dropout: float = 0.0,
) -> torch.Tensor:
    """SDPA of ``query`` ``[B, H, T, d]`` over ``key``/``value`` ``[B, H_kv, S, d]`` (H a multiple of H_kv;
    query head h reads key/value head h // (H / H_kv), as ``repeat_kv`` lays them out) with a mask
    ``[B or 1, 1, T, S]`` or none; returns ``[B, H, T, d]``. A group's query heads go one after another
    along the query axis, so no key/value head is copied."""
    batch, heads, length, dim = query.shape
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    packed = query.reshape(batch, kv_heads, groups * length, dim)
    if mask is not None:
        mask = mask.expand(-1, groups, -1, -1).reshape(mask.shape[0], 1, groups * length, mask.shape[-1])
    out = F.scaled_dot_product_attention(packed, key, value, attn_mask=mask, dropout_p=dropout, scale=scale)
    return out.reshape(batch, heads, length, dim)


def grouped_sdpa_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature over :func:`grouped_attention`; returns ``[B, T, H, d]``.
    Rows of different lengths on the CPU are attended by a ragged plan where it reads fewer keys; other
    one-token steps, ungrouped heads, per-head masks and extras (soft-capping, position biases) go to
    transformers' own SDPA attention."""
    simple = (
        getattr(module, "num_key_value_groups", 1) > 1
        and attention_mask is not None
        and attention_mask.dim() == 4
        and attention_mask.shape[1] == 1
        and kwargs.get("softcap") is None
        and kwargs.get("position_bias") is None
        and not kwargs.get("output_attentions", False)
    )
    plan = _ragged_plan(attention_mask) if simple and query.device.type == "cpu" else None
    if plan is not None:
        attend = partial(grouped_attention, scale=scaling, dropout=dropout)
        out = ragged_attention(attend, query, key, value, attention_mask, plan)
    elif simple and query.shape[2] > 1:
        out = grouped_attention(query, key, value, attention_mask, scaling, dropout)
    else:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    return out.transpose(1, 2).contiguous(), None


# Every layer of a forward gets the same mask object: its plan is made once, for the first layer.
_last_plan: list = [None, None]


def _ragged_plan(mask: torch.Tensor) -> RaggedPlan | None:
    """The mask's ragged plan (:mod:`specdec.engine.ragged`), none inside a compiled graph (its shapes
    would depend on the data)."""
    if torch.compiler.is_compiling():
        return None
    if _last_plan[0] is not mask:
        _last_plan[:] = mask, plan_for(mask)
    return _last_plan[1]


AttentionInterface.register(NAME, grouped_sdpa_attention)
# The masks SDPA gets: without this a copy given a 2-D padding mask (not the engine's own 4-D masks) would
# be given no mask at all (transformers builds none for an attention it does not know).
AttentionMaskInterface.register(NAME, sdpa_mask)


def use_grouped_attention(model: nn.Module) -> nn.Module:
    """Switch ``model``'s SDPA attention to :func:`grouped_sdpa_attention`, in place (every config its
    modules read, nested ones included); other attention implementations are left as they are. For a
    copy of a model the caller owns, never the user's own."""
    configs = {
        id(c): c for m in model.modules() if isinstance(c := getattr(m, "config", None), PretrainedConfig)
    }
    for config in configs.values():
        if getattr(config, "_attn_implementation", None) == "sdpa":
            config._attn_implementation = NAME
    return model


def grouped_attention_copy(model: nn.Module) -> nn.Module:
    """A copy of ``model`` on :func:`grouped_sdpa_attention` that shares every parameter and buffer with it
    (no weight duplicated): what a compiled CPU step runs, so its verify blocks read key/value heads in
    place too while the user's model keeps its own attention."""
    return use_grouped_attention(shallow_copy(model))
