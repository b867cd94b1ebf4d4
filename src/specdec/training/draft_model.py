"""Build a small causal LM that shares the target's tokenizer, fresh or initialised from the target.

The draft is the target's own architecture class with fewer (and optionally narrower) layers, so
it loads with ``AutoModelForCausalLM.from_pretrained`` anywhere. Initialising from the target copies
the embeddings, the final norm and a chosen subset of layers when the width matches; a narrower
draft gets the target's embeddings projected onto their top principal directions, so its token
geometry starts from the target's instead of from noise.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel

from specdec.engine.modeling import decoder_layers
from specdec.errors import InvalidArgumentError


@dataclass
class DraftShape:
    num_layers: int = 4
    hidden_size: int | None = None  # None: the target's
    intermediate_size: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None
    init: str = "target"  # "target" or "fresh"
    init_layers: tuple[int, ...] | None = None  # target layers to copy; default: spread over the depth


def default_init_layers(target_layers: int, draft_layers: int) -> tuple[int, ...]:
    """First and last layers of the target, then evenly spaced ones: early layers read tokens,
    late layers write the output space, and both are what a shallow draft needs most."""
    if draft_layers == 1:
        return (0,)
    picks = torch.linspace(0, target_layers - 1, draft_layers).round().long().tolist()
    return tuple(dict.fromkeys(picks))


def build_draft(target: PreTrainedModel, shape: DraftShape, seed: int = 0) -> PreTrainedModel:
    config = copy.deepcopy(target.config)
    total = config.num_hidden_layers
    if not 1 <= shape.num_layers <= total:
        raise InvalidArgumentError(f"draft num_layers must be in [1, {total}], got {shape.num_layers}")
    if shape.init not in ("target", "fresh"):
        raise InvalidArgumentError(f"init must be 'target' or 'fresh', got {shape.init!r}")
    config.num_hidden_layers = shape.num_layers
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[: shape.num_layers]
    width = shape.hidden_size or config.hidden_size
    heads = shape.num_heads or (
        config.num_attention_heads if width == config.hidden_size else max(1, width // 64)
    )
    if width % heads:
        raise InvalidArgumentError(f"hidden_size {width} is not divisible by num_heads {heads}")
    kv_heads = shape.num_kv_heads or (
        getattr(config, "num_key_value_heads", heads) if heads == config.num_attention_heads else heads
    )
    if heads % kv_heads:
        raise InvalidArgumentError(f"num_heads {heads} is not divisible by num_kv_heads {kv_heads}")
    same_width = width == config.hidden_size
    config.hidden_size = width
    config.num_attention_heads, config.num_key_value_heads = heads, kv_heads
    config.head_dim = width // heads
    if shape.intermediate_size or not same_width:
        # Llama-style configs name the MLP width intermediate_size; GPT-2's n_inner (None = 4 × width)
        # follows the width by itself unless it was set.
        name = "intermediate_size" if hasattr(config, "intermediate_size") else "n_inner"
        current = getattr(config, name, None)
        if shape.intermediate_size or current is not None:
            setattr(config, name, shape.intermediate_size or int(current * width / target.config.hidden_size))
    torch.manual_seed(seed)
    draft = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if shape.init == "target":
        _init_from_target(draft, target, shape, same_width)
    return draft.eval()


@torch.no_grad()
def _init_from_target(
    draft: PreTrainedModel, target: PreTrainedModel, shape: DraftShape, same_width: bool
) -> None:
    target_embed = target.get_input_embeddings().weight.float()
    if same_width:
        draft.get_input_embeddings().weight.copy_(target_embed)
        draft_layers, target_layers = decoder_layers(draft), decoder_layers(target)
        picks = shape.init_layers or default_init_layers(len(target_layers), shape.num_layers)
        if len(picks) != shape.num_layers or not all(0 <= i < len(target_layers) for i in picks):
            raise InvalidArgumentError(
                f"init_layers must name {shape.num_layers} layers in [0, {len(target_layers)}), got {picks}"
            )
        for dst, src in zip(draft_layers, picks, strict=True):
            dst.load_state_dict(target_layers[src].state_dict())
        target_norm, draft_norm = (
            getattr(target.base_model, "norm", None),
            getattr(draft.base_model, "norm", None),
        )
        if target_norm is not None and draft_norm is not None:
            draft_norm.load_state_dict(target_norm.state_dict())
    else:
        centered = target_embed - target_embed.mean(0)
        _, _, basis = torch.linalg.svd(centered[:: max(1, len(centered) // 8192)], full_matrices=False)
        width = draft.config.hidden_size
        projected = target_embed @ basis[:width].T
        projected *= target_embed.std() / projected.std()
        draft.get_input_embeddings().weight.copy_(projected)
    head, target_head = draft.get_output_embeddings(), target.get_output_embeddings()
    if head is not None and not draft.config.tie_word_embeddings and same_width and target_head is not None:
        head.weight.copy_(target_head.weight)
