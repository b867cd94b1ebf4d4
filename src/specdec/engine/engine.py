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
from functools import partial

import torch
from transformers import PreTrainedModel

from specdec.engine.attention import use_grouped_attention
from specdec.engine.batch import BatchState
from specdec.engine.cache import SlotCache
from specdec.engine.forward import ModelCalls
from specdec.engine.graphs import StepGraphs
from specdec.engine.kernels import pack_linear_layers, packing_supported, two_token_forward
from specdec.engine.layout import BlockLayout
from specdec.engine.lean import lean_forward_matches
from specdec.engine.modeling import (
    attention_masks,
    check_rollback_support,
    context_size,
)
from specdec.engine.output import ExtendOutput
from specdec.engine.static_steps import STATIC_WIDTHS, StaticSteps
from specdec.errors import InvalidArgumentError


class Engine(BatchState, BlockLayout, ModelCalls, StaticSteps):
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
        # Only the model's own stack runs as a compiled static step or a graph's replay (hidden states and
        # given embeddings such as BiTA's masks included): given layer inputs (Tandem's primary states)
        # arrive through the layers' forward pre-hooks, which a compiled step would not run and the lean
        # path's layer calls do. The lean path runs where its probe found it equal to the model's forward.
        own_stack = model is None and not layer_inputs
        padded, static = self._step_kind(width, own_stack)
        lean = model is None and not static and (self.lean_hidden if hidden_layers else self.lean)
        run_width = self.graphs.width if padded else width
        layout = self._place(tokens, block, positions, sees_reserved, run_width, static)
        given_embeds = (embeds, embeds_mask)
        if padded:
            output = self._replay_block(layout, width, run_width, given_embeds, num_logits, hidden_layers)
        else:
            runner = self.compiled if static else self.model if model is None else model
            given = (layer_inputs, layer_input_mask)
            output = self._eager_block(runner, layout, lean, given_embeds, given, num_logits, hidden_layers)
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
