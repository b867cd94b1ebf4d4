"""Attention over rows of different lengths without reading every row at the longest one's length.

A batch's rows share one slot axis: a short prompt's keys sit at the same columns as a long one's
last keys, with masked-out columns before them. One attention call reads every row over the whole
range, so a single long request makes every row pay for its length: at 64 rows of 300 tokens, one row
of 1,500 nearly doubled the cost of a plain step (8.4 against 4.3 ms a row on the 2-core EPYC,
``benchmarks/results/pad_step_probe_2026-11-28.log``). A *ragged plan* cuts the key range at a column:
every row attends over the columns after it (a view, nothing copied), and the few rows that see keys
before it (the *long* rows) are attended again over their own range, their first result replaced.
The plan is chosen on the mask alone, by the keys each way reads, and only where it saves enough.
It applies where rows end together (a left-padded batch, as ``Engine.start`` prefills); a served
batch's joining rows start at the front with a gap before the common write column, which no cut of
the front reaches, so they get none yet (``benchmarks/CAMPAIGN.md``, next run 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# A long row's keys and values are copied out (index_select) before its second call: reading them costs
# about twice what reading them in place does.
LONG_ROW_COST = 2.0
# Plans that read more than this share of the single call's keys are not worth a second call.
WORTH = 0.8


@dataclass(frozen=True)
class RaggedPlan:
    """Every row over columns ``cut`` on; ``long_rows`` again over columns ``long_start`` on."""

    cut: int
    long_rows: torch.Tensor
    long_start: int


def first_visible(mask: torch.Tensor) -> torch.Tensor:
    """Per row of a boolean ``[B, 1, T, K]`` mask, the first key column any of its queries sees (K
    where none does)."""
    seen = mask.any(dim=2)[:, 0]
    columns = seen.shape[-1]
    return torch.where(seen.any(-1), seen.to(torch.uint8).argmax(-1), columns)


def choose_cut(first: torch.Tensor, columns: int) -> RaggedPlan | None:
    """The cut that reads the fewest keys, counting ``rows × (columns − cut)`` for the call over every
    row and ``LONG_ROW_COST × long rows × (columns − their first column)`` for the long rows' own call;
    None where no cut reads less than ``WORTH`` of ``rows × columns``."""
    rows = len(first)
    order = first.sort().values.tolist()
    best, best_cost = None, WORTH * rows * columns
    for index, cut in enumerate(order):
        if index and cut == order[index - 1]:
            continue  # the same cut as the last: the rows before it are the long ones either way
        cost = rows * (columns - cut) + LONG_ROW_COST * index * (columns - order[0])
        if cost < best_cost:
            best, best_cost = (index, cut), cost
    if best is None:
        return None
    index, cut = best
    long_rows = (first < cut).nonzero().flatten()
    return RaggedPlan(cut=cut, long_rows=long_rows, long_start=order[0] if index else cut)


def plan_for(mask: torch.Tensor) -> RaggedPlan | None:
    """The ragged plan for a boolean ``[B, 1, T, K]`` mask; None for one row or nothing to save."""
    if mask.shape[0] < 2 or mask.dtype != torch.bool:
        return None
    return choose_cut(first_visible(mask), mask.shape[-1])


def ragged_attention(attend, query, key, value, mask, plan: RaggedPlan) -> torch.Tensor:
    """``attend(query, key, value, mask)`` (``[B, H, T, d]`` out) run by ``plan``: every row over the
    columns from the cut, then the long rows over theirs, their first result replaced."""
    out = attend(query, key[:, :, plan.cut :], value[:, :, plan.cut :], mask[..., plan.cut :])
    if len(plan.long_rows):
        rows, start = plan.long_rows, plan.long_start
        again = attend(
            query.index_select(0, rows),
            key[:, :, start:].index_select(0, rows),
            value[:, :, start:].index_select(0, rows),
            mask[..., start:].index_select(0, rows),
        )
        out.index_copy_(0, rows, again)
    return out
