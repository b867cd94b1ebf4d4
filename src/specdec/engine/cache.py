"""A preallocated KV cache addressed by *slot*, where rollback is bookkeeping, not copying.

Each layer holds key/value buffers of shape ``[batch, heads, capacity, head_dim]``. A forward
writes its new tokens into the next free slots; which slots a row may attend to is decided by
the attention mask the engine builds, not by the cache. Rejecting draft tokens, keeping only the
accepted branch of a tree, or padding rows of different lengths are then all the same operation:
marking slots invalid. Compared with ``DynamicCache`` (a ``torch.cat`` per layer per step) nothing
is reallocated per step; compared with ``StaticCache`` attention only reads the slots in use. The
engine starts it small and grows it (doubling) when a block does not fit, so memory follows the
text actually generated, never ``max_new_tokens``.
"""

from __future__ import annotations

import weakref

import torch
from transformers.cache_utils import Cache, CacheLayerMixin


class SlotLayer(CacheLayerMixin):
    """One layer's buffers; writes land at the owning cache's ``write_start``."""

    is_compileable = False
    is_sliding = False
    is_croppable = True

    def __init__(self, owner: SlotCache):
        super().__init__()
        # Weak: the cache holds its layers, and layers holding their cache back would be a reference
        # cycle, which only Python's cyclic collector frees, and rarely: a finished batch's buffers
        # (9 GB at 64 rows of 3,000 slots) then outlived it into the next batch.
        self._owner = weakref.ref(owner)

    @property
    def owner(self) -> SlotCache:
        return self._owner()

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        # Shapes, dtype and device come from the first write so per-layer head counts and
        # accelerate's per-layer device placement need no configuration.
        batch, heads = max(key_states.shape[0], self.owner.buffer_rows), key_states.shape[1]
        capacity = self.owner.capacity
        self.keys = key_states.new_zeros(batch, heads, capacity, key_states.shape[-1])
        self.values = value_states.new_zeros(batch, heads, capacity, value_states.shape[-1])
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        # The forward's rows are the buffers' first rows: a view, so a graph captured over it reads
        # the same memory whatever rows later leave or join in place.
        rows = key_states.shape[0]
        keys, values = self.keys[:rows], self.values[:rows]
        slots = self.owner.slots
        if slots is not None:  # static shapes: write at the given slots, read every slot (the mask decides)
            keys.index_copy_(2, slots, key_states)
            values.index_copy_(2, slots, value_states)
            return keys, values
        start = self.owner.write_start
        end = start + key_states.shape[-2]
        keys[:, :, start:end] = key_states
        values[:, :, start:end] = value_states
        first, last = self.owner.read_start, max(end, self.owner.read_end)
        return keys[:, :, first:last], values[:, :, first:last]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        if self.owner.slots is not None:
            return self.owner.capacity, 0
        return max(self.owner.write_start + query_length, self.owner.read_end), 0

    def get_seq_length(self) -> int:
        return self.owner.write_start

    def get_max_length(self) -> int:
        return self.owner.capacity

    def gather_slots(self, index: torch.Tensor, in_place: bool) -> None:
        """Reorder slots per row (``index``: ``[batch, capacity]``, the first rows): used to squeeze out
        holes."""
        if not self.is_initialized:
            return
        rows = index.shape[0]
        idx = index.to(self.keys.device)[:, None, :, None]
        live = self.keys[:rows], self.values[:rows]
        self._replace(*(t.gather(2, idx.expand_as(t)) for t in live), in_place)

    def _replace(self, keys: torch.Tensor, values: torch.Tensor, in_place: bool) -> None:
        """Make ``keys``/``values`` the buffers' first rows: copied into them ``in_place`` (graphs read
        them there), else the buffers become these tensors (rows beyond the live ones are stale anyway,
        and one copy is cheaper than two)."""
        if in_place:
            self.keys[: len(keys)].copy_(keys)
            self.values[: len(values)].copy_(values)
        else:
            self.keys, self.values = keys, values

    def add_rows(self, other: SlotLayer, rows: tuple[int, int], columns: tuple[int, int, int]) -> bool:
        """Put ``other``'s rows after this cache's ``rows[0]`` live ones (the engine made room), or rows of
        zeros for whichever side has not allocated its buffers yet (``rows``: both sides' row counts).
        ``columns`` (reserved, used, shift): ``other``'s reserved slots land at the same columns, its
        slots from there to ``used`` ``shift`` columns further right. In place where the buffers have
        the rows to spare; returns whether they were reallocated."""
        if not (self.is_initialized or other.is_initialized):
            return False
        mine, theirs = rows
        spare = self.is_initialized and self.keys.shape[0] >= mine + theirs
        if not spare:
            like = self if self.is_initialized else other
            shape = (max(mine + theirs, self.owner.buffer_rows), like.keys.shape[1], self.owner.capacity)
            keys = like.keys.new_zeros(*shape, like.keys.shape[-1])
            values = like.values.new_zeros(*shape, like.values.shape[-1])
            if self.is_initialized:
                keys[:mine], values[:mine] = self.keys[:mine], self.values[:mine]
            self.keys, self.values, self.is_initialized = keys, values, True
        for mine_buffer, theirs_buffer in ((self.keys, other.keys), (self.values, other.values)):
            new = mine_buffer[mine : mine + theirs]
            new.zero_()
            if other.is_initialized:
                reserved, used, shift = columns
                new[:, :, :reserved] = theirs_buffer[:theirs, :, :reserved].to(new.device)
                new[:, :, reserved + shift : used + shift] = theirs_buffer[:theirs, :, reserved:used].to(
                    new.device
                )
        return not spare

    def select_rows(self, rows: torch.Tensor, in_place: bool) -> None:
        """Keep ``rows``, as the buffers' first rows (see :meth:`_replace`)."""
        if self.is_initialized:
            rows = rows.to(self.keys.device)
            self._replace(self.keys.index_select(0, rows), self.values.index_select(0, rows), in_place)

    def move_rows(self, targets: torch.Tensor, sources: torch.Tensor) -> None:
        """Copy rows ``sources`` onto rows ``targets``, in place (no source is a target)."""
        if self.is_initialized:
            targets, sources = targets.to(self.keys.device), sources.to(self.keys.device)
            for buffer in (self.keys, self.values):
                buffer.index_copy_(0, targets, buffer.index_select(0, sources))

    def grow(self, capacity: int, rows: int) -> None:
        """Reallocate to ``capacity`` slots and ``rows`` rows, keeping the slots in use of the first rows
        (the live ones: spare rows beyond them are not carried over)."""
        if self.is_initialized:
            used, kept = self.keys.shape[2], min(rows, self.keys.shape[0])
            keys = self.keys.new_zeros(rows, self.keys.shape[1], capacity, self.keys.shape[-1])
            values = self.values.new_zeros(rows, self.values.shape[1], capacity, self.values.shape[-1])
            keys[:kept, :, :used], values[:kept, :, :used] = self.keys[:kept], self.values[:kept]
            self.keys, self.values = keys, values


class SlotCache(Cache):
    """The container the model sees; the engine owns the slot bookkeeping around it."""

    def __init__(self, num_layers: int, capacity: int, buffer_rows: int = 1):
        self.capacity = capacity
        # Rows the buffers hold at least: a graphed engine allocates a batch-size bucket, so rows can
        # join in place; the rows a forward uses are the first ones (see SlotLayer.update).
        self.buffer_rows = buffer_rows
        self.write_start = 0
        self.read_start = 0  # attention reads slots read_start .. (skipping reserved slots no query sees)
        self.read_end = 0  # .. up to the block's end, or this slot if later (a read length rounded up)
        # Set for a static-shape (compiled) step: the slot index of each new token, a tensor so the
        # step's graph does not depend on where in the cache it writes; reads then span the capacity.
        self.slots: torch.Tensor | None = None
        super().__init__(layers=[SlotLayer(self) for _ in range(num_layers)])

    @property
    def allocated_rows(self) -> int | None:
        """Rows the buffers hold (the live ones first); None before the first write allocates them."""
        first = self.layers[0]
        return first.keys.shape[0] if first.is_initialized else None

    def gather_slots(self, index: torch.Tensor, in_place: bool = False) -> None:
        """Reorder the live rows' slots; ``in_place`` keeps the buffers where CUDA graphs read them."""
        for layer in self.layers:
            layer.gather_slots(index, in_place)

    def select_rows(self, rows: torch.Tensor, in_place: bool = False) -> None:
        """Keep ``rows`` (the others leave; new row i is old row ``rows[i]``); ``in_place`` keeps the buffers
        where CUDA graphs read them.

        Where the rows that stay keep their places but for rows from beyond the new batch moving into
        the places of rows that left (what the decoding loop asks: :meth:`Rows.drop`), only those are
        copied, and the buffers keep their spare rows for the next arrival. A full copy of the cache
        instead, on every departure and again on every arrival, halved plain decoding's throughput at 64
        concurrent requests (several GB per copy; 2026-11-25)."""
        moves = hole_moves(rows)
        for layer in self.layers:
            if moves is None:
                layer.select_rows(rows, in_place)
            elif len(moves[0]):
                layer.move_rows(*moves)

    def add_rows(self, other: SlotCache, rows: tuple[int, int], columns: tuple[int, int, int]) -> bool:
        """Put ``other``'s rows after this cache's live ones (``rows``: this cache's and ``other``'s row
        counts; ``columns``: where their slots go, see :meth:`SlotLayer.add_rows`); whether the buffers
        were reallocated to make room."""
        moved = [
            layer.add_rows(theirs, rows, columns)
            for layer, theirs in zip(self.layers, other.layers, strict=True)
        ]
        return any(moved)

    def grow(self, capacity: int, rows: int) -> None:
        """Reallocate every layer to ``capacity`` slots for the first ``rows`` rows (the live rows' bucket).

        Not for every row the buffers hold: rows kept spare for arrivals (:meth:`select_rows`) would
        multiply a late growth's cost, when most requests have left (64 rows doubled at 4,096 slots is
        12 GB of fp32 keys and values for SmolLM2, and the old buffers are still held while copying)."""
        self.buffer_rows = rows
        for layer in self.layers:
            layer.grow(capacity, rows)
        self.capacity = capacity

    def write(self, start: int, keys_values: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Write given keys/values ``[B, heads, n, head_dim]`` per layer into slots ``start`` .. ``start + n``
        (e.g. learned prefix states that no forward computes)."""
        saved = self.write_start
        self.write_start = start
        try:
            for layer, (keys, values) in zip(self.layers, keys_values, strict=True):
                layer.update(keys, values)
        finally:
            self.write_start = saved

    def nbytes(self) -> int:
        """Bytes held by the key/value buffers allocated so far."""
        return sum(
            t.nelement() * t.element_size()
            for layer in self.layers
            if layer.is_initialized
            for t in (layer.keys, layer.values)
        )


def hole_moves(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """For a row selection where every row either stays where it is or comes from beyond the new batch
    size (filling a hole a departed row left), the (targets, sources) to copy; None for any other
    selection (a copy of every row then)."""
    rows = rows.to("cpu")
    places = torch.arange(len(rows))
    moved = rows != places
    if bool((rows[moved] < len(rows)).any()):
        return None
    return places[moved], rows[moved]
