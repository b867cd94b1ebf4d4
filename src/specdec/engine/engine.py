"""Drive an unmodified transformers causal LM token-block by token-block.

The engine is the one place that talks to the model. Every forward goes through
:meth:`Engine.extend` with explicit position ids and an explicit 4D attention mask built from the
slot bookkeeping of :class:`~specdec.engine.cache.SlotCache`. That single mechanism covers
left-padded batches, rows that accepted different numbers of draft tokens, tree-shaped blocks
and rollback, so decoders never touch the cache.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from functools import partial

import torch
from torch import nn
from transformers import PreTrainedModel

from specdec.engine.attention import use_grouped_attention
from specdec.engine.batch import BatchState
from specdec.engine.cache import SlotCache
from specdec.engine.graphs import StepGraphs, masks_to
from specdec.engine.kernels import pack_linear_layers, packing_supported, two_token_forward
from specdec.engine.layout import BlockLayout
from specdec.engine.lean import lean_forward, lean_forward_matches
from specdec.engine.modeling import (
    attention_masks,
    check_rollback_support,
    context_size,
    given_layer_inputs,
    plain_causal,
    with_cache,
)
from specdec.engine.output import ExtendOutput
from specdec.engine.static_steps import STATIC_WIDTHS, StaticSteps
from specdec.errors import InvalidArgumentError


class Engine(BatchState, BlockLayout, StaticSteps):
    """Prefill, extend, roll back and (for trees) keep a path, over one batch of rows.

    Every method that touches the cache or the slot bookkeeping runs under inference mode, so the
    state tensors are inference tensors throughout and can be updated in place from any of them.

    Args:
        model: any transformers causal LM with full or sliding-window attention.
        pack_weights: use prepacked batch-invariant linear kernels (a packed copy of the model);
            ``None`` means "when supported" (fp32 on CPU; bf16 on CPUs with oneDNN bf16 kernels).
        compile: the fast step of the engine's device. On CPU, one-token steps and verify blocks (up
            to ``STATIC_WIDTHS`` tokens) of the user's model run as static-shape steps under
            ``torch.compile`` with inductor's C++ GEMM kernels (:meth:`compile_steps`: two graphs;
            :mod:`specdec.engine.compiling`): a SmolLM2 step 38 against 72 ms eager on a 2-core Cascade
            Lake Xeon, for ~2 minutes of compiling per graph, logits equal to the eager engine's to fp32
            rounding. On CUDA, every block of up to ``STATIC_WIDTHS`` token ids runs as one padded static
            step replayed from a CUDA graph of the compiled model (:meth:`capture_graphs`), the hidden
            states a drafter asks for included: plain decoding 10-15× HF ``generate`` on an H100
            (``benchmarks/ENGINE_SPEED_GPU.md``). Prefills and blocks with given layer inputs stay
            eager; blocks with given embeddings (BiTA's masks) compile or replay too. Off by default.
        warm_up: with ``compile``, compile the one-row steps without hidden states now, so that no
            generation pays a compile midway; ``False`` leaves them to first use, for a caller that
            warms the shapes its batches meet itself (:meth:`warm_up_serving`): each graph compiled and
            never met costs minutes of a 2-core CPU's start-up.
        lean: run blocks of token ids through :func:`~specdec.engine.lean.lean_forward` (the model's
            own modules without transformers' per-call wrappers); ``None`` means "when it gives this
            model's logits bit for bit", checked on a probe at construction. Blocks that ask for
            hidden states take it only where the probe found those equal too (:attr:`lean_hidden`).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        *,
        pack_weights: bool | None = None,
        compile: bool = False,
        lean: bool | None = None,
        warm_up: bool = True,
    ):
        check_rollback_support(model)
        if pack_weights is None:
            pack_weights = packing_supported(model)
        elif pack_weights and not packing_supported(model):
            raise InvalidArgumentError(
                "pack_weights=True needs an fp32 model (or bf16 where oneDNN has bf16 kernels for this CPU) "
                "on CPU with oneDNN available"
            )
        # The packed copy is the engine's own (its config too): linears reading one input packed as one,
        # attention reading grouped key/value heads in place (engine/attention.py). The user's model stays.
        self.model = (
            use_grouped_attention(pack_linear_layers(model, two_token_forward)) if pack_weights else model
        )
        self.user_model = model  # the weights compiled steps run (compile_steps), never the packed copy's
        self.config = model.config
        self.max_positions = context_size(model)
        self.device = next(model.parameters()).device
        self.dtype = self.model.dtype  # a property that walks the parameters: read once, not per step
        self._takes_logits_to_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        matches, hidden_matches = (
            (False, False)
            if lean is False
            else lean_forward_matches(self.model, partial(attention_masks, self.config, self.dtype))
        )
        if lean and not matches:
            raise InvalidArgumentError(
                f"the lean forward does not reproduce {type(model).__name__}'s logits: use lean=None or False"
            )
        self.lean, self.lean_hidden = matches, hidden_matches
        # Attention reads a number of slots that is a multiple of this (the free ones masked out). On
        # CUDA, SDPA may pick cuDNN attention, which builds an execution plan per new shape: a read
        # length growing by one slot a step would be a new shape every step. Rounded, a few serve all.
        self.read_bucket = 64 if self.device.type == "cuda" else 1
        self.cache: SlotCache | None = None
        self.compiled: Callable | None = None
        self.graphs: StepGraphs | None = None
        self._smallest_static = 2
        # Seconds spent compacting and growing the cache (host clock): amortised upkeep that a step
        # happens to trigger, which a cost model timing its steps should not charge to that step.
        self.upkeep_seconds = 0.0
        if compile:
            if self.device.type == "cuda":
                self.capture_graphs(compile=True, warm_up=warm_up)
            else:
                self.compile_steps(warm_up=warm_up, one_token=True)

    # -- forward -------------------------------------------------------------------------------
    @torch.inference_mode()
    def extend(
        self,
        tokens: torch.Tensor,
        *,
        token_mask: torch.Tensor | None = None,
        tree_mask: torch.Tensor | None = None,
        num_logits: int | None = None,
        hidden_layers: Sequence[int] = (),
        model: PreTrainedModel | None = None,
        layer_inputs: dict[int, torch.Tensor] | None = None,
        layer_input_mask: torch.Tensor | None = None,
        embeds: torch.Tensor | None = None,
        embeds_mask: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        sees_reserved: torch.Tensor | None = None,
    ) -> ExtendOutput:
        """Run the model on a block of new tokens per row and keep them in the cache.

        Args:
            tokens: ``[B, T]`` new tokens.
            token_mask: ``[B, T]``, False for padding inside the block (rows needing fewer tokens).
            tree_mask: ``[T, T]`` or ``[B, T, T]``, True where token i may attend to block token j
                (its ancestors and itself). Default: causal. Position ids follow the tree depth.
            num_logits: compute logits for the last ``num_logits`` positions only (prefill: 1).
            hidden_layers: indices into the model's hidden states (0 = embeddings) to return.
            model: run this stack instead, e.g. an early exit (the first layers of this model):
                it fills only its own layers' slots, which a later full-model pass over the same
                tokens overwrites.
            layer_inputs: ``{j: [B, T, d]}`` given input hidden states of decoder layer j for the
                tokens ``layer_input_mask`` marks (all if None); see :func:`given_layer_inputs`.
            embeds: ``[B, T, d]`` input embeddings of the tokens ``embeds_mask`` marks (all if None),
                in place of their token ids' (learned tokens such as BiTA's masks).
            positions: ``[B, T]`` position ids, in place of those the tree depth gives.
            sees_reserved: ``[B, T]``, True for the queries that may see the reserved slots.
        """
        batch, width = tokens.shape
        if batch != self.batch_size:
            raise InvalidArgumentError(f"block has {batch} rows but the engine holds {self.batch_size}")
        token_mask, block = self._block_mask(batch, width, token_mask, tree_mask)
        positions = self._positions(block, positions)
        # The model's own stack: a compiled static step, a graph's replay (hidden states included, as a
        # drafter reading them asks at every verify) or the lean path can run it, over token ids or given
        # embeddings (BiTA's mask tokens; a compiled step traces a graph of its own for them): where the
        # lean probe found the lean path equal to the model's forward over token ids, that forward does
        # nothing between the embedding table and the layers. Given layer inputs (Tandem's primary states)
        # arrive through the layers' own forward pre-hooks, which the lean path's layer calls run as the
        # model's forward does; a compiled step would not run them.
        own_stack = model is None and not layer_inputs
        padded, static = self._step_kind(width, own_stack)
        lean = model is None and not static and (self.lean_hidden if hidden_layers else self.lean)
        run_width = self.graphs.width if padded else width
        self._make_room(run_width)
        block |= torch.eye(width, dtype=torch.bool)  # padding rows attend to themselves
        first, past = self._visible(width, sees_reserved)
        start = self.slots.length
        tokens, mask, positions, key_pos, write_slots, read_end = self._layout(
            tokens, past, block, positions, first, run_width if static else None
        )
        self.cache.write_start, self.cache.read_start, self.cache.read_end = start, first, read_end
        if padded:  # the graphs copy the inputs into their own buffers on the device
            given = None if embeds is None else self._padded_embeds(embeds, embeds_mask, run_width)
            out = self._replay(tokens, mask, positions, key_pos, write_slots, width, hidden_layers, given)
            logits = out.logits if num_logits is None else out.logits[:, -num_logits:]
            # A graph's output buffers are overwritten by its next replay: keep copies.
            hidden = {i: h.clone() for i, h in out.hidden_states.items()}
            output = ExtendOutput(logits=logits.clone(), hidden_states=hidden)
        else:
            # The lean path hands each layer its mask as it is, so a plain causal block may go without.
            masks = (
                None
                if lean and plain_causal(self.config, mask)
                else masks_to(attention_masks(self.config, self.dtype, mask, positions, key_pos), self.device)
            )
            output = self._forward(
                self.compiled if static else self.model if model is None else model,
                self._inputs(tokens.to(self.device), embeds, embeds_mask),
                positions.to(self.device),
                masks,
                write_slots,
                (layer_inputs, layer_input_mask),
                num_logits=num_logits,
                hidden_layers=hidden_layers,
                lean=lean,
            )
        self.slots.write(token_mask, positions)
        return output

    def _step_kind(self, width: int, own_stack: bool) -> tuple[bool, bool]:
        """(padded, static): whether the block replays a padded graph step, and whether it runs as a
        static-shape step at all (graphed, or compiled for verify widths), both only for the model's
        ``own_stack`` and once a first eager forward has allocated the cache's buffers."""
        allocated = self.cache.layers[0].is_initialized
        padded = self.graphs is not None and own_stack and allocated and width <= self.graphs.width
        compiled = self.compiled is not None and own_stack and allocated
        return padded, padded or (compiled and self._smallest_static <= width <= STATIC_WIDTHS)

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

    def _forward(
        self, runner, inputs, positions, masks, write_slots, given, *, num_logits, hidden_layers, lean
    ) -> ExtendOutput:
        """One forward of ``runner`` over the cache, writing to ``write_slots`` (a static step's) or after
        the last slot, with ``given`` (layer inputs, their mask) in place of the layers' own inputs."""
        layer_inputs, input_mask = given
        context = given_layer_inputs(runner, layer_inputs, input_mask) if layer_inputs else nullcontext()
        self.cache.slots = None if write_slots is None else write_slots.to(self.device)
        try:
            with context:
                return self._call(
                    runner, inputs, positions, masks, num_logits, hidden_layers, lean, write_slots is not None
                )
        finally:
            self.cache.slots = None

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

    def prefill(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        hidden_layers: Sequence[int] = (),
        layer_inputs: dict[int, torch.Tensor] | None = None,
    ) -> ExtendOutput:
        """Left-pad the prompts into one block; returns logits at each row's last token.

        ``layer_inputs`` (see :meth:`extend`) must be left-padded the same way: a target's prefill
        hidden states are, so they can be handed to another engine's prefill as they are.
        """
        width = max(len(p) for p in prompts)
        tokens = torch.zeros(len(prompts), width, dtype=torch.long)
        token_mask = torch.zeros(len(prompts), width, dtype=torch.bool)
        for row, prompt in enumerate(prompts):
            if prompt:
                tokens[row, width - len(prompt) :] = torch.as_tensor(list(prompt))
                token_mask[row, width - len(prompt) :] = True
        return self.extend(
            tokens,
            token_mask=token_mask,
            num_logits=1,
            hidden_layers=hidden_layers,
            layer_inputs=layer_inputs,
        )
