"""The batch an :class:`~specdec.engine.Engine` holds: starting one, admitting and releasing rows mid-flight,
rolling back, keeping a tree's path, and the cache's compaction and growth. All of it is bookkeeping over the
engine's cache (:class:`~specdec.engine.cache.SlotCache`) and its model-free slot table
(:class:`~specdec.engine.slots.SlotTable`); the forward that fills them is the engine's own (engine.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from specdec.engine.cache import SlotCache
from specdec.engine.memory import check_fits, kv_bytes_per_slot
from specdec.engine.output import ExtendOutput
from specdec.engine.slots import SlotTable
from specdec.engine.static_steps import GRAPH_CAPACITY_STEP, graph_rows
from specdec.errors import CacheMemoryError, InvalidArgumentError

# Where the slot bookkeeping (valid slots, positions) and the masks built from it live, whatever the
# model's device: they are tiny, and on a GPU each of their ops would be a kernel launch and each read
# of them (a length, a position check) a synchronisation. Inputs go to the model's device once, at the end.
HOST = torch.device("cpu")


class BatchState:
    """Start, admit, release, roll back, keep and compact the engine's rows (a mixin of the engine: it reads
    the engine's config, device, dtype, graphs and forward)."""

    cache: SlotCache | None
    slots: SlotTable
    upkeep_seconds: float

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
        rows = self._buffer_rows(batch_size)
        reuse = (
            self.graphs is not None
            and self.cache is not None
            and (self.cache.allocated_rows or 0) >= rows
            and self.cache.capacity >= capacity
        )
        if reuse:  # the buffers the graphs were captured with: they stay valid for this batch
            capacity = self.cache.capacity
        else:
            self.check_fits(rows, capacity)
            self.cache = SlotCache(self.config.num_hidden_layers, capacity, rows)
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

    def _buffer_rows(self, batch_size: int) -> int:
        """Rows to allocate the cache buffers for: the batch-size bucket (a power of two), so rows can
        join and leave in place — under the graphs captured for each bucket, on a graphed engine; and
        without copying every row's cache at each arrival, on any (requests joining one by one up to
        64 rows would otherwise reallocate and copy the whole cache 63 times)."""
        return graph_rows(batch_size)

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
        a scratch cache, whose slots then join this one's so that their prompts end at the batch's write
        column (rows stay right-aligned: :class:`~specdec.engine.slots.SlotTable`; the running rows move
        right first where a newcomer is longer); the reserved slots get the states
        :meth:`write_reserved` was given (the same in every row).
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
        if self.batch_size and table.length > self.slots.length:
            # The running rows move right rather than each keep a gap before the new write column, which
            # every later step would read: one gather of their cache against that read at every step.
            self.cache.gather_slots(
                self.slots.shift(table.length - self.slots.length), self.graphs is not None
            )
        self.cache.buffer_rows = self._buffer_rows(self.batch_size + table.batch_size)
        columns = (reserved, table.length, self.slots.join_shift(table.length))
        if self.cache.add_rows(scratch, (self.batch_size, table.batch_size), columns):
            self._drop_graphs()  # the buffers had no rows to spare: reallocated for the bucket
        self.slots.admit(table.valid[:, : table.length], table.positions[:, : table.length])
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
            self.cache.grow(capacity, self._buffer_rows(self.batch_size))
        except RuntimeError as err:  # torch's allocator failing ("can't allocate memory", CUDA OOM)
            wanted = self.cache.nbytes() // max(1, old) * capacity
            raise CacheMemoryError(
                f"the KV cache could not grow to {capacity} slots for {self.batch_size} row(s) "
                f"(~{wanted / 2**30:.1f} GiB): lower max_new_tokens, the batch size or the prompt length"
            ) from err
        self._drop_graphs()
        self.slots.grow(capacity)

    @torch.inference_mode()
    def rollback(self, num_tokens: int | torch.Tensor) -> None:
        """Forget the last ``num_tokens`` tokens of each row (an int, or a ``[B]`` tensor)."""
        self.slots.rollback(torch.as_tensor(num_tokens).to(HOST))

    @torch.inference_mode()
    def keep(self, keep_mask: torch.Tensor) -> None:
        """Keep only the marked tokens of the last block (e.g. the accepted path of a tree)."""
        self.slots.keep(keep_mask.to(HOST))

    @torch.inference_mode()
    def compact(self) -> None:
        """Squeeze out rolled-back holes: each row's tokens, in order, end together at the new write
        column (:meth:`~specdec.engine.slots.SlotTable.compact`)."""
        self.cache.gather_slots(self.slots.compact(), in_place=self.graphs is not None)  # graphs stay valid

    @torch.inference_mode()
    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` of the batch (finished rows leave so they cost nothing)."""
        rows = rows.to(HOST)
        self.cache.select_rows(rows, in_place=self.graphs is not None)  # graphs stay valid
        self.slots.select_rows(rows)
