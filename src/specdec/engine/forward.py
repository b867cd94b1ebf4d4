"""How an :class:`~specdec.engine.Engine` runs one block through the model once
:meth:`~specdec.engine.Engine.extend` has laid it out: replayed from a padded graph step, or one eager
(or compiled static-shape) forward over the cache, through the lean path where it gives the model's
own logits. Kept apart from the layout and the slot bookkeeping, which do not depend on how a block
runs.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
from torch import nn

from specdec.engine.graphs import masks_to
from specdec.engine.lean import lean_forward
from specdec.engine.modeling import attention_masks, given_layer_inputs, plain_causal, with_cache
from specdec.engine.output import ExtendOutput

# (tokens, mask, positions, key positions, write slots): a block as BlockLayout._place lays it out.
Layout = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]


class ModelCalls:
    """The model calls of one laid-out block, mixed into the engine (they read its model and cache)."""

    def _replay_block(
        self, layout: Layout, width: int, run_width: int, given_embeds, num_logits, hidden_layers
    ) -> ExtendOutput:
        """A block of ``width`` tokens replayed from the padded ``run_width`` graph step (the graphs copy
        the inputs into their own buffers on the device), with ``given_embeds`` (embeddings, their mask)
        in place of some tokens' own."""
        embeds, embeds_mask = given_embeds
        given = None if embeds is None else self._padded_embeds(embeds, embeds_mask, run_width)
        out = self._replay(*layout, width, hidden_layers, given)
        logits = out.logits if num_logits is None else out.logits[:, -num_logits:]
        # A graph's output buffers are overwritten by its next replay: keep copies.
        hidden = {i: h.clone() for i, h in out.hidden_states.items()}
        return ExtendOutput(logits=logits.clone(), hidden_states=hidden)

    def _eager_block(
        self, runner, layout: Layout, lean: bool, given_embeds, given_inputs, num_logits, hidden_layers
    ) -> ExtendOutput:
        """One forward of ``runner`` (the model, a compiled static step or another stack) over the block,
        with ``given_embeds`` (embeddings, their mask) and ``given_inputs`` (layer inputs, their mask) in
        place of the tokens' and layers' own."""
        tokens, mask, positions, key_pos, write_slots = layout
        # The lean path hands each layer its mask as it is, so a plain causal block may go without.
        masks = (
            None
            if lean and plain_causal(self.config, mask)
            else masks_to(attention_masks(self.config, self.dtype, mask, positions, key_pos), self.device)
        )
        inputs = self._inputs(tokens.to(self.device), *given_embeds)
        layer_inputs, input_mask = given_inputs
        context = given_layer_inputs(runner, layer_inputs, input_mask) if layer_inputs else nullcontext()
        self.cache.slots = None if write_slots is None else write_slots.to(self.device)
        try:
            with context:
                return self._call(
                    runner,
                    inputs,
                    positions.to(self.device),
                    masks,
                    num_logits,
                    hidden_layers,
                    lean,
                    write_slots is not None,
                )
        finally:
            self.cache.slots = None

    def _padded_embeds(self, embeds: torch.Tensor, embeds_mask, run_width: int) -> tuple[torch.Tensor, ...]:
        """Given embeddings ``[B, T, d]`` and where they apply ``[B, T]`` (all if None), padded to a static
        step's width (the padding takes its tokens' own), in the model's dtype on its device."""
        batch, width, size = embeds.shape
        replaced = torch.zeros(batch, run_width, dtype=torch.bool, device=self.device)
        replaced[:, :width] = True if embeds_mask is None else embeds_mask.to(self.device)
        padded = torch.zeros(batch, run_width, size, dtype=self.dtype, device=self.device)
        padded[:, :width] = embeds.to(self.device, self.dtype)
        return padded, replaced

    def _inputs(self, tokens: torch.Tensor, embeds, embeds_mask) -> dict[str, torch.Tensor]:
        """The model's inputs: token ids, or embeddings with given ones where ``embeds_mask`` says."""
        if embeds is None:
            return {"input_ids": tokens}
        own = self.model.get_input_embeddings()(tokens)
        given = embeds.to(own.device, own.dtype)
        if embeds_mask is not None:
            given = torch.where(embeds_mask.to(own.device)[..., None], given, own)
        return {"inputs_embeds": given}

    def _call(
        self, runner, inputs, positions, masks, num_logits, hidden_layers, lean, static
    ) -> ExtendOutput:
        """The lean path where it applies, else the model's own forward (a static step computes every
        position's logits: one graph fewer)."""
        if lean:
            return lean_forward(
                self.model,
                inputs.get("input_ids"),
                positions,
                masks,
                self.cache,
                num_logits,
                hidden_layers,
                inputs_embeds=inputs.get("inputs_embeds"),
            )
        kwargs = {}
        if self._takes_logits_to_keep and num_logits is not None and not static:
            kwargs["logits_to_keep"] = num_logits
        owner = runner if isinstance(runner, nn.Module) else self.model  # a compiled step is a function
        out = runner(
            **inputs,
            position_ids=positions,
            attention_mask=masks,
            **with_cache(owner, self.cache),
            use_cache=True,
            output_hidden_states=bool(hidden_layers),
            **kwargs,
        )
        logits = out.logits if num_logits is None else out.logits[:, -num_logits:]
        return ExtendOutput(logits=logits, hidden_states={i: out.hidden_states[i] for i in hidden_layers})
