"""Drive an unmodified transformers causal LM token-block by token-block.

The engine is the one place that talks to the model. Every forward goes through
:meth:`Engine.extend` with explicit position ids and an explicit 4D attention mask built from the
slot bookkeeping of :class:`~specdec.engine.cache.SlotCache`. That single mechanism covers
left-padded batches, rows that accepted different numbers of draft tokens, tree-shaped blocks
and rollback, so decoders never touch the cache.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial

import torch
from torch import nn
from transformers import PreTrainedModel

from specdec.engine.cache import SlotCache
from specdec.engine.graphs import StepGraphs, masks_to
from specdec.engine.kernels import pack_linear_layers, packing_supported
from specdec.engine.lean import lean_forward, lean_forward_matches
from specdec.engine.memory import check_fits, kv_bytes_per_slot
from specdec.engine.modeling import attention_masks, check_rollback_support, context_size, given_layer_inputs
from specdec.engine.slots import SlotTable
from specdec.engine.static_steps import GRAPH_CAPACITY_STEP, STATIC_WIDTHS, StaticSteps
from specdec.errors import CacheMemoryError, InvalidArgumentError, PromptError

# Where the slot bookkeeping (valid slots, positions) and the masks built from it live, whatever the
# model's device: they are tiny, and on a GPU each of their ops would be a kernel launch and each read
# of them (a length, a position check) a synchronisation. Inputs go to the model's device once, at the end.
_HOST = torch.device("cpu")


@dataclass
class ExtendOutput:
    logits: torch.Tensor  # [B, num_logits, V]
    hidden_states: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> [B, T, d]


class Engine(StaticSteps):
    """Prefill, extend, roll back and (for trees) keep a path, over one batch of rows.

    Every method that touches the cache or the slot bookkeeping runs under inference mode, so the
    state tensors are inference tensors throughout and can be updated in place from any of them.

    Args:
        model: any transformers causal LM with full or sliding-window attention.
        pack_weights: use prepacked batch-invariant linear kernels (a packed copy of the model);
            ``None`` means "when supported" (fp32 on CPU; bf16 on CPUs with oneDNN bf16 kernels).
        compile: the fast step of the engine's device. On CPU, verify blocks (2 to ``STATIC_WIDTHS``
            tokens) run as static-shape steps under ``torch.compile`` (:meth:`compile_steps`); on
            CUDA, every plain block of up to ``STATIC_WIDTHS`` tokens runs as one padded static step
            replayed from a CUDA graph of the compiled model (:meth:`capture_graphs`). Prefills and
            blocks with given layer inputs, embeddings or hidden-state outputs stay eager. Off by
            default: on a 2-core CPU it saved 4-10 % of a 4-token target block for ~50 s of compiling
            (``benchmarks/COMPILE_PROBE.md``); on an H100 it made plain decoding 10-15× HF
            ``generate`` (``benchmarks/ENGINE_SPEED_GPU.md``).
        lean: run plain blocks through :func:`~specdec.engine.lean.lean_forward` (the model's own
            modules without transformers' per-call wrappers); ``None`` means "when it gives this
            model's logits bit for bit", checked on a probe at construction.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        *,
        pack_weights: bool | None = None,
        compile: bool = False,
        lean: bool | None = None,
    ):
        check_rollback_support(model)
        if pack_weights is None:
            pack_weights = packing_supported(model)
        elif pack_weights and not packing_supported(model):
            raise InvalidArgumentError(
                "pack_weights=True needs an fp32 model (or bf16 where oneDNN has bf16 kernels for this CPU) "
                "on CPU with oneDNN available"
            )
        self.model = pack_linear_layers(model) if pack_weights else model
        self.config = model.config
        self.max_positions = context_size(model)
        self.device = next(model.parameters()).device
        self.dtype = self.model.dtype  # a property that walks the parameters: read once, not per step
        self._takes_logits_to_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        matches = lean is not False and lean_forward_matches(
            self.model, partial(attention_masks, self.config, self.dtype)
        )
        if lean and not matches:
            raise InvalidArgumentError(
                f"the lean forward does not reproduce {type(model).__name__}'s logits: use lean=None or False"
            )
        self.lean = matches
        # Attention reads a number of slots that is a multiple of this (the free ones masked out). On
        # CUDA, SDPA may pick cuDNN attention, which builds an execution plan per new shape: a read
        # length growing by one slot a step would be a new shape every step. Rounded, a few serve all.
        self.read_bucket = 64 if self.device.type == "cuda" else 1
        self.cache: SlotCache | None = None
        self.compiled: nn.Module | None = None
        self.graphs: StepGraphs | None = None
        self._smallest_static = 2
        # Seconds spent compacting and growing the cache (host clock): amortised upkeep that a step
        # happens to trigger, which a cost model timing its steps should not charge to that step.
        self.upkeep_seconds = 0.0
        if compile:
            self.capture_graphs(compile=True) if self.device.type == "cuda" else self.compile_steps()

    # -- state ---------------------------------------------------------------------------------
    @torch.inference_mode()
    def reset(self, batch_size: int, capacity: int, reserved: int = 0) -> None:
        """Start a new batch with ``capacity`` slots per row to begin with.

        The cache grows when a block does not fit, so ``capacity`` is only a first guess; it is
        capped at the context window, which no row can outgrow. ``reserved`` slots at the front hold
        states no forward computes (:meth:`write_reserved`, e.g. BiTA's learned prefix): they hold
        no token, take no position, and only the queries an :meth:`extend` names may see them.
        """
        if isinstance(reserved, bool) or not isinstance(reserved, int) or reserved < 0:
            raise InvalidArgumentError(f"reserved slots must be an integer >= 0, got {reserved!r}")
        capacity = self._capacity_for(capacity, reserved)
        reuse = (
            self.graphs is not None
            and self.cache is not None
            and self.cache.batch_size == batch_size
            and self.cache.capacity >= capacity
        )
        if reuse:  # the buffers the graphs were captured with: they stay valid for this batch
            capacity = self.cache.capacity
        else:
            self.check_fits(batch_size, capacity)
            self.cache = SlotCache(self.config.num_hidden_layers, capacity)
            self._drop_graphs()
        self.slots = SlotTable(batch_size, self.cache.capacity, reserved)
        self._reserved_states: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    @torch.inference_mode()
    def write_reserved(self, keys_values: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Put given keys/values ``[B or 1, kv_heads, reserved, head_dim]``, one pair per layer, in the
        reserved slots."""
        if not self.slots.reserved:
            raise InvalidArgumentError("this batch has no reserved slots: start it with reserved > 0")
        shapes = {tuple(t.shape[-2:-1]) for kv in keys_values for t in kv}
        if len(keys_values) != self.config.num_hidden_layers or shapes != {(self.slots.reserved,)}:
            raise InvalidArgumentError(
                f"reserved states must be {self.config.num_hidden_layers} (key, value) pairs of "
                f"{self.slots.reserved} slots each"
            )
        self._reserved_states = [
            (k[:1], v[:1]) for k, v in keys_values
        ]  # the same in every row: admit copies them
        batch, dtype = self.batch_size, self.dtype
        self.cache.write(
            0,
            [
                (
                    k.to(self.device, dtype).expand(batch, *k.shape[1:]),
                    v.to(self.device, dtype).expand(batch, *v.shape[1:]),
                )
                for k, v in keys_values
            ],
        )

    def _capacity_for(self, capacity: int, reserved: int = 0) -> int:
        """The slots :meth:`reset` allocates for a wish of ``capacity`` (graphed engines round up)."""
        capacity = self.first_capacity(capacity) + reserved
        if self.graphs is not None:
            capacity = -(-capacity // GRAPH_CAPACITY_STEP) * GRAPH_CAPACITY_STEP
        return capacity

    def first_capacity(self, capacity: int) -> int:
        """The slots :meth:`reset` starts with for a wish of ``capacity``: capped at the context window."""
        if self.max_positions is not None:
            capacity = min(capacity, self.max_positions)
        return max(1, capacity)

    def check_fits(self, rows: int, capacity: int) -> None:
        """Raise :class:`~specdec.errors.CacheMemoryError` before allocating more than the device holds."""
        check_fits(rows, capacity, kv_bytes_per_slot(self.config, self.dtype), self.device)

    def start(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        extra_slots: int,
        hidden_layers: Sequence[int] = (),
        reserved: int = 0,
    ) -> ExtendOutput | None:
        """Reset for ``prompts`` and prefill all but each one's last token.

        The last token is the row's *pending* token, which the first decoding step feeds (alone, or
        ahead of a draft block), so every decoder and model drafter starts the same way. ``extra_slots``
        is the expected growth beyond the longest prompt; ``reserved`` see :meth:`reset`. Returns the
        prefill's output (logits at each row's last prefilled token; hidden states of every prefilled
        token, left-padded), or None when every prompt is a single token.
        """
        self.reset(len(prompts), max(len(p) for p in prompts) + extra_slots, reserved)
        return self._prefill_all_but_last(prompts, hidden_layers)

    def _prefill_all_but_last(
        self,
        prompts: Sequence[Sequence[int]],
        hidden_layers: Sequence[int],
        layer_inputs: dict[int, torch.Tensor] | None = None,
    ) -> ExtendOutput | None:
        """Prefill each prompt but its pending last token (None: every prompt is that one token)."""
        if not any(len(p) > 1 for p in prompts):
            return None
        return self.prefill([p[:-1] for p in prompts], hidden_layers=hidden_layers, layer_inputs=layer_inputs)

    @torch.inference_mode()
    def admit(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        hidden_layers: Sequence[int] = (),
        layer_inputs: dict[int, torch.Tensor] | None = None,
    ) -> ExtendOutput | None:
        """Add rows for ``prompts`` to the running batch, prefilled as :meth:`start` prefills (all but each
        one's pending last token), without touching the other rows' tokens. Returns that prefill's output
        for the new rows (None when every prompt is one token); they are the batch's last rows.

        The newcomers' prefill runs as a batch of its own (the running rows compute nothing for it) in
        a scratch cache, whose slots then join this one's at the same columns; the reserved slots get
        the states :meth:`write_reserved` was given (the same in every row).
        """
        if self.cache is None:
            raise InvalidArgumentError("admit adds rows to a running batch: start one first")
        reserved = self.slots.reserved
        if reserved and self._reserved_states is None:
            raise InvalidArgumentError("write the reserved slots (write_reserved) before admitting rows")
        running = self.cache, self.slots, self.graphs  # graphs replay the running cache's buffers only
        self.graphs = None
        longest = max(len(p) for p in prompts)
        self.cache = SlotCache(self.config.num_hidden_layers, self.first_capacity(longest) + reserved)
        self.slots = SlotTable(len(prompts), self.cache.capacity, reserved)
        try:
            if reserved:
                self.write_reserved(self._reserved_states)
            out = self._prefill_all_but_last(prompts, hidden_layers, layer_inputs)
            scratch, table = self.cache, self.slots
        finally:
            self.cache, self.slots, self.graphs = running
        if table.length > self.cache.capacity:
            self._grow(table.length)
        self.cache.add_rows(scratch, (self.batch_size, table.batch_size))
        self.slots.admit(table.valid[:, : table.length], table.positions[:, : table.length])
        self._drop_graphs()
        return out

    @torch.inference_mode()
    def release(self, rows: Sequence[int] | torch.Tensor) -> None:
        """Drop ``rows`` (finished or aborted requests); the others keep their tokens, in order."""
        gone = set(torch.as_tensor(rows, dtype=torch.long).tolist())
        self.select_rows(torch.tensor([r for r in range(self.batch_size) if r not in gone], dtype=torch.long))

    @property
    def batch_size(self) -> int:
        return self.slots.batch_size

    @property
    def num_tokens(self) -> torch.Tensor:
        """Tokens held per row, which is also the position id of the row's next token."""
        return self.slots.num_tokens

    def room(self) -> torch.Tensor | None:
        """Positions each row can still fill before the context window is full (None: no window)."""
        if self.max_positions is None:
            return None
        return self.max_positions - self.num_tokens

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
        if token_mask is None:
            token_mask = torch.ones(batch, width, dtype=torch.bool)
        token_mask = token_mask.to(_HOST)
        block = torch.ones(width, width, dtype=torch.bool).tril()
        if tree_mask is not None:
            block = tree_mask.to(_HOST, torch.bool)
        block = block.expand(batch, width, width) & token_mask[:, None, :]
        if positions is None:
            positions = (self.num_tokens[:, None] + block.sum(-1) - 1).clamp(min=0)
        positions = positions.to(_HOST)
        if self.max_positions is not None and int(positions.max()) >= self.max_positions:
            raise PromptError(f"sequence exceeds the model's context of {self.max_positions} tokens")
        # The plain case (no other stack, given inputs or hidden states) skips transformers' wrappers.
        plain = model is None and not layer_inputs and embeds is None and not hidden_layers
        allocated = self.cache.layers[0].is_initialized  # a first (eager) forward allocated the buffers
        padded = self.graphs is not None and plain and allocated and width <= self.graphs.width
        static = padded or (
            self.compiled is not None
            and model is None
            and not layer_inputs
            and embeds is None
            and self._smallest_static <= width <= STATIC_WIDTHS
            and allocated
        )
        run_width = self.graphs.width if padded else width
        self._make_room(run_width)
        block |= torch.eye(width, dtype=torch.bool)  # padding rows attend to themselves
        # Attention reads the reserved slots only when a query may see them, so a block that has none
        # computes exactly what it would without them.
        asks = sees_reserved is not None and bool(sees_reserved.any())
        first = 0 if asks else self.slots.reserved
        past = self.slots.visible(first, width)
        if asks:
            past = past.clone()
            past[..., : self.slots.reserved] = sees_reserved.to(_HOST, torch.bool)[:, :, None]
        start = self.slots.length
        if static:
            mask, positions, key_pos, write_slots = self._static_layout(
                past, block, positions, first, run_width
            )
            pad = torch.zeros(batch, run_width - width, dtype=torch.long, device=tokens.device)
            tokens, read_end = torch.cat([tokens, pad], dim=1), 0  # tokens stay where they are
        else:
            mask, key_pos, read_end = self._eager_layout(past, block, positions, first)
        self.cache.write_start, self.cache.read_start, self.cache.read_end = start, first, read_end
        kwargs = {}
        if self._takes_logits_to_keep and num_logits is not None and not static:
            kwargs["logits_to_keep"] = num_logits  # a static step computes them all: one graph fewer
        masks = attention_masks(self.config, self.dtype, mask, positions, key_pos)
        if padded:  # the graphs copy the inputs into their own buffers on the device
            logits = self.graphs(tokens, positions, masks, write_slots)[:, :width]
            # A graph's output buffer is overwritten by its next replay: keep a copy.
            logits = (logits if num_logits is None else logits[:, -num_logits:]).clone()
            self.slots.write(token_mask, positions)
            return ExtendOutput(logits=logits)
        host_positions, tokens, positions = positions, tokens.to(self.device), positions.to(self.device)
        masks = masks_to(masks, self.device)
        runner = self.model if model is None else model
        if static:
            runner = self.compiled
            self.cache.slots = write_slots.to(self.device)
        given = given_layer_inputs(runner, layer_inputs, layer_input_mask) if layer_inputs else nullcontext()
        if embeds is None:
            inputs = {"input_ids": tokens}
        else:
            own = self.model.get_input_embeddings()(tokens)
            given_embeds = embeds.to(own.device, own.dtype)
            if embeds_mask is not None:
                given_embeds = torch.where(embeds_mask.to(own.device)[..., None], given_embeds, own)
            inputs = {"inputs_embeds": given_embeds}
        lean = self.lean and plain and not static
        try:
            if lean:
                logits = lean_forward(self.model, tokens, positions, masks, self.cache, num_logits)
                hidden = {}
            else:
                with given:
                    out = runner(
                        **inputs,
                        position_ids=positions,
                        attention_mask=masks,
                        past_key_values=self.cache,
                        use_cache=True,
                        output_hidden_states=bool(hidden_layers),
                        **kwargs,
                    )
                logits = out.logits if num_logits is None else out.logits[:, -num_logits:]
                hidden = {i: out.hidden_states[i] for i in hidden_layers}
        finally:
            self.cache.slots = None
        self.slots.write(token_mask, host_positions)
        return ExtendOutput(logits=logits, hidden_states=hidden)

    def _eager_layout(self, past, block, positions, first: int) -> tuple:
        """The mask ``[B, 1, T, K]`` and key positions of an eager block over slots ``first`` up to a
        multiple of ``read_bucket`` slots (the free ones beyond the block masked out), and that end."""
        batch, width = positions.shape
        length = self.slots.length
        end = length + width
        read_end = min(self.cache.capacity, first + -(-(end - first) // self.read_bucket) * self.read_bucket)
        beyond = torch.zeros(batch, width, read_end - end, dtype=torch.bool)
        mask = torch.cat([past, block, beyond], dim=-1)[:, None]
        slot_pos = self.slots.positions
        key_pos = torch.cat([slot_pos[:, first:length], positions, slot_pos[:, end:read_end]], -1)
        return mask, key_pos, read_end

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

    def _make_room(self, width: int) -> None:
        """Fit a block of ``width`` slots: squeeze out rolled-back holes, then grow (doubling) if that
        freed too little. Rows never hold more tokens than the context window, so growth is bounded
        by it plus one block."""
        if self.slots.fits(width):
            return
        began = time.perf_counter()
        try:
            self._compact_or_grow(width)
        finally:
            self.upkeep_seconds += time.perf_counter() - began

    def _compact_or_grow(self, width: int) -> None:
        capacity = self.cache.capacity
        if self.slots.has_holes():
            self.compact()
        needed = self.slots.length + width
        if needed <= capacity and capacity - needed >= capacity // 4:
            return  # compaction freed enough; growing now would waste memory
        target = max(needed, 2 * capacity)
        if self.max_positions is not None:
            target = max(needed, min(target, self.max_positions + self.slots.reserved + width))
        if target > capacity:
            self._grow(target)

    def _grow(self, capacity: int) -> None:
        old = self.cache.capacity
        try:
            self.cache.grow(capacity)
        except RuntimeError as err:  # torch's allocator failing ("can't allocate memory", CUDA OOM)
            wanted = self.cache.nbytes() // max(1, old) * capacity
            raise CacheMemoryError(
                f"the KV cache could not grow to {capacity} slots for {self.batch_size} row(s) "
                f"(~{wanted / 2**30:.1f} GiB): lower max_new_tokens, the batch size or the prompt length"
            ) from err
        self._drop_graphs()
        self.slots.grow(capacity)

    # -- rollback ------------------------------------------------------------------------------
    @torch.inference_mode()
    def rollback(self, num_tokens: int | torch.Tensor) -> None:
        """Forget the last ``num_tokens`` tokens of each row (an int, or a ``[B]`` tensor)."""
        self.slots.rollback(torch.as_tensor(num_tokens).to(_HOST))

    @torch.inference_mode()
    def keep(self, keep_mask: torch.Tensor) -> None:
        """Keep only the marked tokens of the last block (e.g. the accepted path of a tree)."""
        self.slots.keep(keep_mask.to(_HOST))

    @torch.inference_mode()
    def compact(self) -> None:
        """Move each row's tokens to the front of its slots (after the reserved ones), squeezing out
        rolled-back holes."""
        self.cache.gather_slots(self.slots.compact())
        self._drop_graphs()

    @torch.inference_mode()
    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` of the batch (finished rows leave so they cost nothing)."""
        rows = rows.to(_HOST)
        self.cache.select_rows(rows)  # (each layer moves the index to its buffers' device)
        self._drop_graphs()
        self.slots.select_rows(rows)
