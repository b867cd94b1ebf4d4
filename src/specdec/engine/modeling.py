"""What the engine needs to know of a transformers model, read from the model alone: its decoder layers,
whether its cache can be rolled back, its context window, the attention masks it takes, and how to
hand a layer given input states. Kept apart from the engine's state so models/ and training can use
them without an engine.
"""

from __future__ import annotations

import copy
import functools
import inspect
from contextlib import contextmanager

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from specdec.errors import InvalidArgumentError, UnsupportedCacheError

# Layer kinds whose state is a plain per-token KV list, so dropping tokens is exact.
_ROLLBACK_LAYER_TYPES = {"full_attention", "sliding_attention"}
_MASKABLE_ATTENTION = {"sdpa", "eager"}


def shallow_copy(model: nn.Module) -> nn.Module:
    """A structural copy sharing every tensor, so converting, cutting or repacking it leaves ``model``
    untouched (its config included) and duplicates no weight."""
    shared = {id(t): t for t in [*model.parameters(), *model.buffers()]}
    return copy.deepcopy(model, memo=shared)


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The model's stack of decoder layers, whatever its architecture names it."""
    base = getattr(model, "base_model", model)
    for name in ("layers", "h", "blocks"):
        layers = getattr(base, name, None)
        if isinstance(layers, nn.ModuleList):
            return layers
    raise InvalidArgumentError(f"cannot find the decoder layers of {type(model).__name__}")


def check_rollback_support(model: PreTrainedModel) -> None:
    """Refuse models whose cache cannot be cut back token by token, before any work is done."""
    config = model.config
    unsupported = sorted(set(getattr(config, "layer_types", None) or ()) - _ROLLBACK_LAYER_TYPES)
    if unsupported or getattr(config, "is_encoder_decoder", False):
        kinds = ", ".join(unsupported) or "encoder-decoder"
        raise UnsupportedCacheError(
            f"{type(model).__name__} has {kinds} layers; specdec can only roll back caches of full and "
            "sliding-window attention layers (recurrent/linear-attention state cannot be rewound per token)."
        )
    impl = getattr(config, "_attn_implementation", "sdpa")
    if impl not in _MASKABLE_ATTENTION:
        raise UnsupportedCacheError(
            f"attention implementation {impl!r} cannot take the custom masks speculative decoding needs; "
            f"load the model with attn_implementation='sdpa' (or 'eager')."
        )


def with_cache(module: nn.Module, cache: object) -> dict[str, object]:
    """``{name: cache}`` under the name ``module``'s forward takes its KV cache by: ``cache`` from
    transformers 5.24, ``past_key_values`` before it (5.24 still takes the old name, with a FutureWarning
    on every model call site, until 5.40). A ``torch.compile``'d module is asked about the module it wraps."""
    return {_cache_parameter(type(getattr(module, "_orig_mod", module))): cache}


@functools.cache
def _cache_parameter(module_type: type) -> str:
    """The name the first forward up the class hierarchy that names one takes: a subclass whose forward
    passes ``*args, **kwargs`` on (a wrapper adding soft-capping, say) takes what its parent's does."""
    for owner in module_type.__mro__:
        forward = owner.__dict__.get("forward")
        parameters = inspect.signature(forward).parameters if forward is not None else {}
        for name in ("cache", "past_key_values"):
            if name in parameters:
                return name
    return "past_key_values"


def context_size(model: PreTrainedModel) -> int | None:
    config = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def attention_masks(
    config: PretrainedConfig, dtype: torch.dtype, mask: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor
):
    """What to pass a model as ``attention_mask`` for the boolean ``[B, 1, Q, K]`` mask ``mask``.

    transformers takes a prepared 4D mask as it is: a dict by layer type for models with per-layer
    types (sliding-window layers get the mask cut to their window, from query and key positions
    ``q_pos`` [B, Q] and ``k_pos`` [B, K]), one tensor otherwise; additive floats for eager attention.
    """
    window = getattr(config, "sliding_window", None) if getattr(config, "use_sliding_window", True) else None
    masks = {"full_attention": mask}
    if window is not None:
        in_window = (q_pos[:, :, None] - k_pos[:, None, :]) < window
        masks["sliding_attention"] = mask & in_window[:, None]
    if getattr(config, "_attn_implementation", "sdpa") == "eager":
        low = torch.finfo(dtype).min
        masks = {
            k: torch.zeros(m.shape, dtype=dtype, device=m.device).masked_fill(~m, low)
            for k, m in masks.items()
        }
    if getattr(config, "layer_types", None) is not None:
        return masks
    # Models without per-layer types use one mask for all layers: windowed if they have a window.
    return masks.get("sliding_attention", masks["full_attention"])


def plain_causal(config: PretrainedConfig, mask: torch.Tensor) -> bool:
    """Whether the boolean ``[B, 1, T, K]`` mask is plain causal attention over exactly the block's own
    keys (a prefill into an empty cache, no padding) in a model whose layers all take that one mask.

    Then SDPA may be called without a mask and with ``is_causal``, which skips the key blocks above the
    diagonal instead of reading and masking them: on the reference CPU a 1,334-token prefill's
    attention costs 14 ms a layer that way against 23 with the mask (2026-11-26). Checked on the mask
    itself rather than inferred from the cache, so a reserved slot, a padded row or a tree is never
    mistaken for it; a decode step (T < K) fails at the first comparison.
    """
    width = mask.shape[-2]
    if mask.shape[-1] != width or width < 2 or getattr(config, "_attn_implementation", "sdpa") != "sdpa":
        return False
    if getattr(config, "sliding_window", None) is not None and getattr(config, "use_sliding_window", True):
        return False
    causal = torch.ones(width, width, dtype=torch.bool, device=mask.device).tril()
    return bool(torch.equal(mask, causal.expand_as(mask)))


@contextmanager
def given_layer_inputs(model: nn.Module, inputs: dict[int, torch.Tensor], where: torch.Tensor | None):
    """Within the block, decoder layer j takes ``inputs[j]`` ``[B, T, d]`` as its input hidden states
    (at the tokens ``where`` [B, T] marks; all if None) instead of the previous layer's output.

    The layer then computes those tokens' keys and values itself, with its own norm, projections and
    rotary embedding, and writes them to the cache like any other: the way to put states that come
    from elsewhere (Tandem's projected primary states) into a cache without re-implementing attention.
    Implemented with forward pre-hooks, PyTorch's own mechanism, removed on exit.
    """
    layers = decoder_layers(model)
    handles = []
    for j, given in inputs.items():

        def replace(module, args, kwargs, given=given):
            hidden = args[0] if args else kwargs["hidden_states"]
            new = given.to(hidden.dtype)
            if where is not None:
                new = torch.where(where[..., None].to(hidden.device), new, hidden)
            if args:
                return (new, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": new}

        handles.append(layers[j].register_forward_pre_hook(replace, with_kwargs=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
