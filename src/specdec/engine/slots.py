"""The slot table: which cache slots each row holds, and at which positions. Bookkeeping without a model.

Every row of a batch addresses the same slot columns of the KV cache; a slot is *valid* for a row
when it holds one of that row's tokens, and carries that token's position id. Blocks are written at
one column range for all rows (``length`` is the first unwritten column); rows needing fewer tokens,
rolled-back drafts and the rejected branches of a tree are invalid slots, which attention masks out
and :meth:`SlotTable.compact` squeezes out. Rows are kept *right-aligned*: a joining row's prompt and a
compacted row's tokens end at the write column, as a left-padded prefill's rows do, so a short row's
range is a suffix of the key columns and attention can skip the columns before it
(:mod:`specdec.engine.ragged`). Kept apart from the engine (as nano-vllm keeps its block
manager apart from its model runner) so every operation can be tested on its own, without a model:
the engine asks where a block goes, what its queries may see and which slots to move, and moves the
cache tensors itself.
"""

from __future__ import annotations

import torch

from specdec.errors import InvalidArgumentError

NO_POSITION = 2**40  # key position of reserved slots: later than any query, inside every window


class SlotTable:
    """Per-row validity and position of ``capacity`` cache slots, the first ``reserved`` of them held
    for states no forward computes (e.g. BiTA's learned prefix)."""

    def __init__(self, batch_size: int, capacity: int, reserved: int = 0):
        if isinstance(reserved, bool) or not isinstance(reserved, int) or reserved < 0:
            raise InvalidArgumentError(f"reserved slots must be an integer >= 0, got {reserved!r}")
        if capacity < reserved:
            raise InvalidArgumentError(f"{capacity} slots cannot hold {reserved} reserved ones")
        self.valid = torch.zeros(batch_size, capacity, dtype=torch.bool)
        self.positions = torch.zeros(batch_size, capacity, dtype=torch.long)
        # Reserved keys sit "after" every query, so no sliding window ever drops them.
        self.positions[:, :reserved] = NO_POSITION
        self.reserved = self.length = reserved
        self.block: tuple[int, int] = (0, 0)  # (first slot, width) of the last block written

    @property
    def batch_size(self) -> int:
        return self.valid.shape[0]

    @property
    def capacity(self) -> int:
        return self.valid.shape[1]

    @property
    def num_tokens(self) -> torch.Tensor:
        """Tokens held per row, which is also the position id of the row's next token."""
        return self.valid[:, : self.length].sum(1)

    def fits(self, width: int) -> bool:
        return self.length + width <= self.capacity

    def has_holes(self) -> bool:
        """Whether some column below ``length`` is invalid for every row's count: compaction frees it."""
        return int(self.valid.sum(1).max()) < self.length - self.reserved

    def visible(self, first: int, width: int) -> torch.Tensor:
        """``[B, width, length − first]``: which written slots from ``first`` on each of a block's
        ``width`` queries may read (all of its row's valid ones)."""
        return self.valid[:, None, first : self.length].expand(self.batch_size, width, self.length - first)

    def write(self, token_mask: torch.Tensor, positions: torch.Tensor) -> int:
        """Record a block of ``token_mask.shape[1]`` slots at ``length``: the tokens ``token_mask``
        [B, T] marks, at ``positions`` [B, T]. Returns its first slot."""
        start, width = self.length, token_mask.shape[1]
        if start + width > self.capacity:
            raise InvalidArgumentError(f"a block of {width} slots does not fit after slot {start}")
        self.valid[:, start : start + width] = token_mask
        self.positions[:, start : start + width] = positions[:, :width]
        self.length = start + width
        self.block = (start, width)
        return start

    def rollback(self, num_tokens: int | torch.Tensor) -> None:
        """Forget the last ``num_tokens`` tokens of each row (an int, or a ``[B]`` tensor)."""
        drop = torch.as_tensor(num_tokens).expand(self.batch_size)
        if bool((drop < 0).any()) or bool((drop > self.num_tokens).any()):
            raise InvalidArgumentError("cannot roll back more tokens than a row holds")
        valid = self.valid[:, : self.length]
        from_end = valid.flip(1).cumsum(1).flip(1)  # valid slots at or after each slot
        valid &= ~(from_end <= drop[:, None])
        self._trim()

    def keep(self, keep_mask: torch.Tensor) -> None:
        """Keep only the marked tokens ``[B, width]`` of the last block (e.g. a tree's accepted path)."""
        start, width = self.block
        self.valid[:, start : start + width] &= keep_mask
        self._trim()

    def _trim(self) -> None:
        used = self.valid[:, : self.length].any(0).nonzero()
        self.length = max(int(used[-1]) + 1 if len(used) else 0, self.reserved)
        self.valid[:, self.length :] = False

    def compact(self) -> torch.Tensor:
        """Squeeze out the holes: each row's tokens, in order, end at the new ``length`` (reserved slots
        + the most tokens any row holds), so a short row's range stays a suffix; returns the
        ``[B, capacity]`` slot order the cache's tensors must be gathered with to match."""
        r = self.reserved
        counts = self.valid.sum(1)
        most = int(counts.max()) if len(counts) else 0
        # Holes first, then the row's tokens in order (a stable sort), ending at the last slot; rolled
        # by ``most`` so that they end at slot r + most instead.
        tokens_last = torch.sort(self.valid[:, r:].to(torch.int8), dim=1, stable=True).indices + r
        tail = tokens_last.roll(most, dims=1)
        order = torch.cat([torch.arange(r).expand(len(tail), r), tail], dim=1)
        self.positions = self.positions.gather(1, order)
        slots = torch.arange(self.capacity)[None, :]
        self.length = r + most
        self.valid = (slots >= self.length - counts[:, None]) & (slots < self.length)
        return order

    def shift(self, columns: int) -> torch.Tensor:
        """Move every row's slots ``columns`` to the right (the reserved ones stay): room in front for a
        newcomer longer than the batch, so that rows stay right-aligned rather than each keeping a gap
        before the new write column. Returns the ``[B, capacity]`` slot order the cache's tensors must be
        gathered with to match."""
        if columns < 0 or self.length + columns > self.capacity:
            raise InvalidArgumentError(f"cannot shift {self.length} slots {columns} to the right")
        r, free = self.reserved, self.capacity - self.reserved
        # New slot j takes old slot j − columns; the first ones take the last slots, which hold no token.
        tail = (torch.arange(free) - columns) % free + r
        order = torch.cat([torch.arange(r), tail]).expand(self.batch_size, -1)
        self.valid = self.valid.gather(1, order)
        self.positions = self.positions.gather(1, order)
        self.length += columns
        self.block = (self.length, 0)
        return order

    def join_shift(self, width: int) -> int:
        """How far right :meth:`admit` moves the token slots of newcomers prefilled in ``width`` columns
        (the reserved ones included): so that they end at the write column, or 0 where they reach past it."""
        return max(0, self.length - width)

    def admit(self, valid: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Add rows holding the slots ``valid`` ``[n, w]`` marks, at ``positions``: newcomers whose prompts
        were prefilled in a table of their own (the same reserved slots first), their token columns
        moved right by :meth:`join_shift` (the cache's copy moves them alike). The other rows are
        untouched; where the newcomers reach past the write column (unless :meth:`shift` made room), the
        columns between a row's last token and the new write column are holes for it, as after a
        rollback. Returns the new rows' indices."""
        added, width = valid.shape
        if width > self.capacity:
            raise InvalidArgumentError(f"{width} slots do not fit a table of {self.capacity}: grow it first")
        if bool(valid[:, : self.reserved].any()):
            raise InvalidArgumentError("a newcomer's tokens cannot sit in the reserved slots")
        first, r, shift = self.batch_size, self.reserved, self.join_shift(width)
        new_valid = torch.zeros(added, self.capacity, dtype=torch.bool)
        new_valid[:, r + shift : width + shift] = valid[:, r:]
        new_positions = torch.zeros(added, self.capacity, dtype=torch.long)
        new_positions[:, r + shift : width + shift] = positions[:, r:]
        new_positions[:, :r] = NO_POSITION
        self.valid = torch.cat([self.valid, new_valid])
        self.positions = torch.cat([self.positions, new_positions])
        used = new_valid.any(0).nonzero()
        if len(used):
            self.length = max(self.length, int(used[-1]) + 1)
        self.block = (self.length, 0)  # the newcomers' slots are no block a tree verification can keep
        return torch.arange(first, first + added)

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` (finished rows leave)."""
        self.valid = self.valid.index_select(0, rows)
        self.positions = self.positions.index_select(0, rows)
        self._trim()

    def grow(self, capacity: int) -> None:
        """Add free slots up to ``capacity``."""
        pad = torch.zeros(self.batch_size, capacity - self.capacity, dtype=torch.bool)
        self.valid = torch.cat([self.valid, pad], dim=1)
        self.positions = torch.cat([self.positions, pad.long()], dim=1)
