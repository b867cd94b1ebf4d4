"""A lean forward: the model's own embedding, rotary, decoder layers, norm and head, called in turn.

A two-layer draft's step is so small that what transformers wraps around the layers (output
capture hooks, config-default merging, mask and cache bookkeeping, output dataclasses) costs a
sizeable share of it. This driver calls the same modules in the order the model's forward does,
with the masks the engine already built, so it computes the same thing with less Python around it.
It assumes that order, so an engine uses it for a model only after :func:`lean_forward_matches`
found its logits bit-for-bit equal to the model's own forward on a probe; anything else (another
layout, extra scaling, soft-capping, a forward that raises) keeps the model's forward. Hidden states
(what EAGLE-3 and Tandem read from every verify pass) are collected on the way, in transformers'
numbering, and served this way only where the probe found all of them equal too (at one row it saves
~5 % of a 5-token verify call, ``benchmarks/LEAN_HIDDEN_PROBE_2026-11-24.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from specdec.engine.cache import SlotCache
from specdec.engine.modeling import with_cache
from specdec.engine.output import ExtendOutput


def has_lean_layout(model: nn.Module) -> bool:
    """``model.model`` holds ``embed_tokens``, ``rotary_emb``, ``layers`` and ``norm``; ``model.lm_head``."""
    inner = getattr(model, "model", None)
    return hasattr(model, "lm_head") and all(
        hasattr(inner, name) for name in ("embed_tokens", "rotary_emb", "layers", "norm")
    )


def lean_forward(
    model: nn.Module,
    input_ids: torch.Tensor | None,
    position_ids: torch.Tensor,
    attention_mask: torch.Tensor | dict[str, torch.Tensor] | None,
    cache: SlotCache,
    num_logits: int | None = None,
    hidden_layers: Sequence[int] = (),
    *,
    inputs_embeds: torch.Tensor | None = None,
) -> ExtendOutput:
    """Logits ``[B, T or num_logits, V]`` for a block, and the hidden states ``[B, T, d]`` of
    ``hidden_layers``; the layers write the block's keys/values into ``cache``.

    ``attention_mask`` is what :func:`specdec.engine.modeling.attention_masks` returns: one 4D mask,
    or one per layer type for models whose layers differ (full / sliding attention), or None for plain
    causal attention over the block alone (:func:`specdec.engine.modeling.plain_causal`). ``hidden_layers``
    are numbered as the model's ``output_hidden_states`` numbers them: 0 the embeddings, i the output of
    layer i, the last (L, or −1) after the final norm. ``inputs_embeds`` ``[B, T, d]`` stand in for the
    embedding table's rows, as in the model's own forward (BiTA's learned mask tokens).
    """
    inner, config = model.model, model.config
    layer_types = getattr(config, "layer_types", None)
    hidden = inner.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
    rotary = inner.rotary_emb(hidden, position_ids)
    last = config.num_hidden_layers
    wanted = {h % (last + 1) for h in hidden_layers}  # negative indices count from the end, as in a tuple
    states = {0: hidden} if 0 in wanted else {}
    given_cache = with_cache(inner.layers[0], cache)  # one name for every layer: looked up once per call
    # zip, not ``layers[:n]``: slicing a ModuleList builds a new one on every step.
    for index, layer in zip(range(last), inner.layers, strict=False):
        mask = attention_mask[layer_types[index]] if isinstance(attention_mask, dict) else attention_mask
        hidden = layer(
            hidden,
            attention_mask=mask,
            position_ids=position_ids,
            **given_cache,
            use_cache=True,
            position_embeddings=rotary,
        )
        if index + 1 in wanted:
            states[index + 1] = hidden  # the last one is replaced by its normed value below
    hidden = inner.norm(hidden)
    if last in wanted:
        states[last] = hidden
    logits = model.lm_head(hidden if num_logits is None else hidden[:, -num_logits:])
    return ExtendOutput(logits=logits, hidden_states={i: states[i % (last + 1)] for i in hidden_layers})


@torch.inference_mode()
def lean_forward_matches(model: nn.Module, masks_for) -> tuple[bool, bool]:
    """Whether :func:`lean_forward` gives exactly the model's own logits, and also every hidden state
    it returns with ``output_hidden_states``, through a prefill and a block that reads it from the cache.

    ``masks_for(mask, q_pos, k_pos)`` turns a boolean ``[1, 1, Q, K]`` mask into the model's
    attention mask (the engine's :func:`~specdec.engine.modeling.attention_masks` for this model).
    """
    if not has_lean_layout(model):
        return False, False
    device = next(model.parameters()).device
    vocab = model.config.vocab_size
    tokens = torch.arange(7, device=device)[None] * 7919 % vocab  # any ids; spread over the table
    logits_match = _probe(model, masks_for, tokens, hidden=False)
    return logits_match, logits_match and _probe(model, masks_for, tokens, hidden=True)


def _probe(model: nn.Module, masks_for, tokens: torch.Tensor, hidden: bool) -> bool:
    """Whether a prefill and a cached block give the model's own logits (``hidden``: and every hidden
    state it returns), run both ways over two caches; False where either way raises."""
    device = tokens.device
    caches = [SlotCache(model.config.num_hidden_layers, 8) for _ in range(2)]
    try:
        for start, end in ((0, 5), (5, 7)):  # a prefill, then a block over the cached slots
            positions = torch.arange(start, end, device=device)[None]
            causal = torch.ones(end, end, dtype=torch.bool, device=device).tril()[start:end]
            mask = masks_for(causal[None, None], positions, torch.arange(end, device=device)[None])
            for cache in caches:
                cache.write_start = start
            own = model(
                input_ids=tokens[:, start:end],
                position_ids=positions,
                attention_mask=mask,
                **with_cache(model, caches[0]),
                use_cache=True,
                output_hidden_states=hidden,
            )
            states = (own.hidden_states or ()) if hidden else ()
            every = range(len(states))
            lean = lean_forward(model, tokens[:, start:end], positions, mask, caches[1], hidden_layers=every)
            if not torch.equal(own.logits, lean.logits) or (hidden and not states):
                return False
            if not all(torch.equal(states[i], lean.hidden_states[i]) for i in every):
                return False
    except Exception:  # any layout this driver does not fit keeps the model's forward
        return False
    return True
