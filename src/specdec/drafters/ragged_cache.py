"""The EAGLE-3 head's key/value cache: ragged rows (each holds as many pairs as it has settled tokens,
positions are columns), so rows join, leave and roll back independently; one layer makes it cheap to
keep. Also the masks a drafted tree's nodes attend with, and the banding of long catch-up queues."""

from __future__ import annotations

import torch


class RaggedCache:
    """Keys and values ``[B, kv heads, capacity, d]`` of one layer on the head's device; row b holds its
    first ``lengths[b]``. The bookkeeping (lengths, masks, row indices) stays on the CPU, where the loop
    reads it without waiting on the device."""

    def __init__(
        self,
        batch: int,
        kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device | str = "cpu",
        capacity: int = 64,
    ):
        self.keys = torch.zeros(batch, kv_heads, capacity, head_dim, dtype=dtype, device=device)
        self.values = torch.zeros_like(self.keys)
        self.lengths = torch.zeros(batch, dtype=torch.long)

    @property
    def used(self) -> int:
        """Columns holding some row's pairs: the longest row's length."""
        return int(self.lengths.max()) if len(self.lengths) else 0

    def block_mask(self, counts: torch.Tensor, width: int) -> torch.Tensor | None:
        """``[B, 1, width, used + width]``: a block's query i (of ``counts[b]`` real ones) sees its row's
        cached pairs and the block up to itself; None where that is everything (one pair per row on rows of
        one length: every draft step of one request), which attention reads as no mask at all."""
        used = self.used
        if width == 1 and self._aligned(used):
            return None
        cached = torch.arange(used)[None, :] < self.lengths[:, None]
        own = (
            torch.ones(width, width, dtype=torch.bool).tril()[None]
            & (torch.arange(width) < counts[:, None])[:, None]
        )
        own |= torch.eye(width, dtype=torch.bool)[None]  # padding queries see themselves: no empty softmax
        return torch.cat([cached[:, None, :].expand(-1, width, -1), own], dim=-1)[:, None]

    def tree_mask(self, settled: torch.Tensor, ancestors: torch.Tensor) -> torch.Tensor:
        """``[B, 1, k, used + k]`` for a block of k drafted tree nodes, one per row each: node i sees its
        row's first ``settled[b]`` pairs, the drafted pairs after them that ``ancestors[i]`` (``[k, D]``
        over the D pairs drafted so far, in the order written) marks, and itself; not its siblings."""
        used = self.used
        offset = torch.arange(used)[None] - settled[:, None]  # [B, used]: a column's place after the settled
        drafted = ancestors.shape[1]
        seen = (offset < 0)[None].expand(len(ancestors), -1, -1)  # [k, B, used]
        if drafted:
            inside = (offset >= 0) & (offset < drafted)
            seen = seen | (inside[None] & ancestors[:, offset.clamp(0, drafted - 1)])
        own = torch.eye(len(ancestors), dtype=torch.bool)[None].expand(len(settled), -1, -1)
        return torch.cat([seen.transpose(0, 1), own], dim=-1)[:, None]

    def past(self) -> tuple[torch.Tensor, torch.Tensor]:
        used = self.used
        return self.keys[:, :, :used], self.values[:, :, :used]

    def _reserve(self, need: int) -> None:
        """Room for ``need`` pairs per row (doubling)."""
        if need > self.keys.shape[2]:
            extra = max(need, 2 * self.keys.shape[2]) - self.keys.shape[2]
            pad = self.keys.new_zeros(*self.keys.shape[:2], extra, self.keys.shape[3])
            self.keys, self.values = torch.cat([self.keys, pad], 2), torch.cat([self.values, pad], 2)

    def _aligned(self, used: int) -> bool:
        """Whether every row holds ``used`` pairs."""
        return len(self.lengths) == 1 or bool((self.lengths == used).all())

    def write(self, keys: torch.Tensor, values: torch.Tensor, counts: torch.Tensor) -> None:
        """Append each row's first ``counts[b]`` block positions after its cached pairs."""
        width = keys.shape[2]
        self._reserve(int((self.lengths + counts).max()) if len(counts) else 0)
        used = self.used
        if len(counts) and self._aligned(used) and bool((counts == width).all()):
            # rows of one length writing whole blocks (one request, always): one slice, not a scatter of
            # every position (a third of a draft step's cost outside the head's own layers)
            self.keys[:, :, used : used + width] = keys
            self.values[:, :, used : used + width] = values
            self.lengths = self.lengths + counts
            return
        real = torch.arange(width)[None] < counts[:, None]
        rows, offsets = real.nonzero(as_tuple=True)
        device = self.keys.device
        rows, columns, real = rows.to(device), (self.lengths[rows] + offsets).to(device), real.to(device)
        self.keys[rows, :, columns] = keys.transpose(1, 2)[real].to(self.keys.dtype)
        self.values[rows, :, columns] = values.transpose(1, 2)[real].to(self.values.dtype)
        self.lengths = self.lengths + counts

    def rollback(self, counts: torch.Tensor) -> None:
        self.lengths = self.lengths - counts

    def select_rows(self, rows: torch.Tensor) -> None:
        on = rows.to(self.keys.device)
        self.keys, self.values, self.lengths = self.keys[on], self.values[on], self.lengths[rows]

    def take(self, rows: torch.Tensor) -> RaggedCache:
        """These rows as a cache of their own (copies), for a call on part of the batch (:meth:`put` back)."""
        part = RaggedCache(0, self.keys.shape[1], self.keys.shape[3], self.keys.dtype, self.keys.device)
        on = rows.to(self.keys.device)
        part.keys, part.values, part.lengths = self.keys[on], self.values[on], self.lengths[rows]
        return part

    def put(self, rows: torch.Tensor, part: RaggedCache) -> None:
        """``part`` (from :meth:`take`) back in place of its rows."""
        self._reserve(part.keys.shape[2])
        width, on = part.keys.shape[2], rows.to(self.keys.device)
        self.keys[on, :, :width], self.values[on, :, :width] = part.keys, part.values
        self.lengths[rows] = part.lengths

    def add_rows(self, count: int) -> None:
        pad = self.keys.new_zeros(count, *self.keys.shape[1:])
        self.keys, self.values = torch.cat([self.keys, pad]), torch.cat([self.values, pad])
        self.lengths = torch.cat([self.lengths, torch.zeros(count, dtype=torch.long)])


# Queues up to this many pairs are caught up in one call for the whole batch (the usual case: a step
# settles a few tokens per row). Longer ones are prompts: padded to the longest, 32 prompts of ~50 to
# ~1,500 tokens cost 4.3 s in one call on the reference CPU, where a server at 32 clients made 45 s of
# progress (2026-11-26 trace).
CATCH_UP_SPLIT = 64


def catch_up_groups(counts: torch.Tensor) -> list[torch.Tensor]:
    """The rows to catch up together: all of them when no queue is longer than ``CATCH_UP_SPLIT``, else
    bands by queue length, each row's queue at least half its band's longest, so a short queue is not
    padded to a long prompt's (one call per band, at most ~log2 of the longest queue)."""
    if len(counts) == 0 or int(counts.max()) <= CATCH_UP_SPLIT:
        return [torch.arange(len(counts))]
    order = torch.argsort(counts, descending=True, stable=True).tolist()
    groups, start = [], 0
    while start < len(order):
        longest, end = int(counts[order[start]]), start
        while end < len(order) and 2 * int(counts[order[end]]) >= longest:
            end += 1
        groups.append(torch.tensor(sorted(order[start:end]), dtype=torch.long))
        start = end
    return groups
