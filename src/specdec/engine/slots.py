"""The slot table: which cache slots each row holds, and at which positions. Bookkeeping without a model.

Every row of a batch addresses the same slot columns of the KV cache; a slot is *valid* for a row
when it holds one of that row's tokens, and carries that token's position id. Blocks are written at
one column range for all rows (``length`` is the first unwritten column); rows needing fewer tokens,
rolled-back drafts and the rejected branches of a tree are invalid slots, which attention masks out
and :meth:`SlotTable.compact` squeezes out. Kept apart from the engine (as nano-vllm keeps its block
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
        """Move each row's tokens to the front (after the reserved slots), in order; returns the
        ``[B, capacity]`` slot order the cache's tensors must be gathered with to match."""
        r = self.reserved
        tail = torch.sort((~self.valid[:, r:]).to(torch.int8), dim=1, stable=True).indices + r
        order = torch.cat([torch.arange(r).expand(len(tail), r), tail], dim=1)
        self.positions = self.positions.gather(1, order)
        counts = self.valid.sum(1)
        slots = torch.arange(self.capacity)[None, :]
        self.valid = (slots >= r) & (slots < r + counts[:, None])
        self.length = r + (int(counts.max()) if len(counts) else 0)
        return order

    def admit(self, valid: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Add rows holding the slots ``valid`` ``[n, w]`` marks, at ``positions``, in columns 0..w: newcomers
        whose prompts were prefilled in a table of their own (the same reserved slots first). The
        other rows are untouched; columns past their tokens are holes for them, as after a rollback.
        Returns the new rows' indices."""
        added, width = valid.shape
        if width > self.capacity:
            raise InvalidArgumentError(f"{width} slots do not fit a table of {self.capacity}: grow it first")
        if bool(valid[:, : self.reserved].any()):
            raise InvalidArgumentError("a newcomer's tokens cannot sit in the reserved slots")
        first = self.batch_size
        new_valid = torch.zeros(added, self.capacity, dtype=torch.bool)
        new_valid[:, :width] = valid
        new_positions = torch.zeros(added, self.capacity, dtype=torch.long)
        new_positions[:, :width] = positions
        new_positions[:, : self.reserved] = NO_POSITION
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
