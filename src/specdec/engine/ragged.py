"""Attention over rows of different lengths without reading every row at the longest one's length.

A batch's rows share one slot axis: a short prompt's keys sit at the same columns as a long one's
last keys, with masked-out columns before them. One attention call reads every row over the whole
range, so a single long request makes every row pay for its length: at 64 rows of 300 tokens, one row
of 1,500 nearly doubled the cost of a plain step (8.4 against 4.3 ms a row on the 2-core EPYC,
``benchmarks/results/pad_step_probe_2026-11-28.log``). A *ragged plan* cuts the key range at a column:
every row attends over the columns after it (a view, nothing copied), and each row that sees keys before
it (a *long* row) is attended again alone, over its own columns (a view too), its first result replaced.
One long request among short ones needs one more call; served rows of many lengths need many (a batch of
64 requests read 4.2× the keys its rows see, ``benchmarks/results/ragged_plan_log_2026-11-28.log``).
Copying long rows out to attend them together cost more than their separate calls
(``benchmarks/campaigns/ragged-attention-probe-2026-11-28.py``). The plan is chosen on the mask alone, by
the keys each way reads, and only where it saves enough. It applies because rows end together: a
left-padded prefill's do, and the slot table keeps joining and compacted rows so
(:class:`~specdec.engine.slots.SlotTable`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# What one long row's own call costs beyond its keys (the call, the row's slices, writing its result back
# over every layer), in keys read by one row: ~55 µs against ~0.09 µs a row-key in a 64-row call, for
# SmolLM2's layer on a 2-core CPU.
ROW_CALL_COST = 512.0
# Plans that read more than this share of the single call's keys are not worth their extra calls.
WORTH = 0.8


@dataclass(frozen=True)
class RaggedPlan:
    """Every row over columns ``cut`` on; then each of ``long_rows`` alone, from its ``starts`` column."""

    cut: int
    long_rows: tuple[int, ...]
    starts: tuple[int, ...]


def first_visible(mask: torch.Tensor) -> torch.Tensor:
    """Per row of a boolean ``[B, 1, T, K]`` mask, the first key column any of its queries sees (K
    where none does)."""
    seen = mask.any(dim=2)[:, 0]
    columns = seen.shape[-1]
    return torch.where(seen.any(-1), seen.to(torch.uint8).argmax(-1), columns)


def plan_cost(rows: int, columns: int, cut: int, long_starts: list[int]) -> float:
    """The keys a plan reads: ``rows × (columns − cut)`` for the call over every row, and for each long
    row from column ``start``, ``columns − start + ROW_CALL_COST``."""
    return rows * (columns - cut) + sum(columns - start + ROW_CALL_COST for start in long_starts)


def choose_plan(first: torch.Tensor, columns: int) -> RaggedPlan | None:
    """The cheapest plan (:func:`plan_cost`) for rows whose first visible columns are ``first``: the cut is
    some row's first column, every row that starts before it is long. None where no plan reads less than
    ``WORTH`` of ``rows × columns``."""
    rows = len(first)
    order = first.sort(stable=True)
    starts = order.values.tolist()
    best, best_cost, long_cost = None, WORTH * rows * columns, 0.0
    for index, cut in enumerate(starts):
        cost = rows * (columns - cut) + long_cost  # rows before ``index`` long
        if cost < best_cost:
            best, best_cost = index, cost
        long_cost += columns - cut + ROW_CALL_COST
    if best is None:
        return None
    long = order.indices[:best].tolist()
    return RaggedPlan(cut=starts[best], long_rows=tuple(long), starts=tuple(starts[:best]))


def plan_for(mask: torch.Tensor) -> RaggedPlan | None:
    """The ragged plan for a boolean ``[B, 1, T, K]`` mask; None for one row or nothing to save."""
    if mask.shape[0] < 2 or mask.dtype != torch.bool:
        return None
    return choose_plan(first_visible(mask), mask.shape[-1])


def ragged_attention(attend, query, key, value, mask, plan: RaggedPlan) -> torch.Tensor:
    """``attend(query, key, value, mask)`` (``[B, H, T, d]`` out) run by ``plan``: every row over the
    columns from the cut, then each long row alone over its own, its first result replaced."""
    out = attend(query, key[:, :, plan.cut :], value[:, :, plan.cut :], mask[..., plan.cut :])
    for row, start in zip(plan.long_rows, plan.starts, strict=True):
        one = slice(row, row + 1)
        out[one] = attend(query[one], key[one, :, start:], value[one, :, start:], mask[one, ..., start:])
    return out
