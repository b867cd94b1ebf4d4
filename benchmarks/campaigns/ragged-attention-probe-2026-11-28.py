"""Session 2026-11-28 (thirty-sixth), CAMPAIGN next run 5: which ragged plan attends served rows fastest. For
the first visible key columns of served forwards (--firsts, written by ragged-plan-log-2026-11-28b.py), one
layer's grouped attention of SmolLM2's shape (9 query heads on 3 key/value heads of 64, fp32, random keys) is
timed by: the single call over every row ("single"); the cut with the long rows attended again together,
copied out ("one band", the plan of b043efd); the plan `ragged.choose_plan` makes, each long row attended
alone over its own columns as a view ("rows alone"). A first version (not committed) also timed the long rows
in several copied bands (a dynamic programme over where each begins), each variant once in turn: the bands
took 7× the single call; in one forward timed alone, copying a band of 7 rows out cost 1.3 ms and attending
them 0.46 ms, against 0.65 ms for the 7 rows' own calls on views. Each variant runs --repeats times after one
warm-up (median), the variants of a forward one after another, first in turn; summed over the forwards; the
machine to itself:
    python benchmarks/campaigns/ragged-attention-probe-2026-11-28.py --firsts FILE.json
"""

import argparse
import json
import statistics
import time
from functools import partial

import torch

from specdec.engine.attention import grouped_attention
from specdec.engine.ragged import choose_plan, ragged_attention

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--firsts", required=True)
parser.add_argument("--repeats", type=int, default=5)
args = parser.parse_args()
with open(args.firsts) as f:
    forwards = json.load(f)["forwards"]


def one_band(query, key, value, mask, first: torch.Tensor) -> torch.Tensor:
    """b043efd's plan: the cheapest cut with the rows before it attended again together, copied out (a
    copy counted twice), over the columns from the first of them; the single call where none pays."""
    columns = key.shape[2]
    order = first.sort().values.tolist()
    best, best_cost = (0, 0), 0.8 * len(order) * columns
    for index, cut in enumerate(order):
        cost = len(order) * (columns - cut) + 2.0 * index * (columns - order[0])
        if cost < best_cost:
            best, best_cost = (index, cut), cost
    cut = best[1]
    out = grouped_attention(query, key[:, :, cut:], value[:, :, cut:], mask[..., cut:])
    rows, start = (first < cut).nonzero().flatten(), order[0]
    if len(rows):
        again = [t.index_select(0, rows) for t in (key[:, :, start:], value[:, :, start:], mask[..., start:])]
        out.index_copy_(0, rows, grouped_attention(query.index_select(0, rows), *again))
    return out


def variants(query, key, value, mask, first: torch.Tensor) -> dict:
    """The ways to attend one forward, each a call with no arguments."""
    plan = choose_plan(first, key.shape[2])
    inputs = (query, key, value, mask)
    return {
        "single": partial(grouped_attention, *inputs),
        "one band": partial(one_band, *inputs, first),
        "rows alone": partial(ragged_attention, grouped_attention, *inputs, plan) if plan else None,
    }


def timed(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


totals = {"single": 0.0, "one band": 0.0, "rows alone": 0.0}
g = torch.Generator().manual_seed(0)
totals_seen = []
for forward in forwards:
    first, columns, width = torch.tensor(forward["first"]), forward["columns"], forward["queries"]
    rows = len(first)
    query = torch.randn(rows, 9, width, 64, generator=g)
    key, value = (torch.randn(rows, 3, columns, 64, generator=g) for _ in range(2))
    mask = torch.arange(columns)[None, None, None, :] >= first[:, None, None, None]
    ways = variants(query, key, value, mask.expand(rows, 1, width, columns).clone(), first)
    ways = {name: fn or ways["single"] for name, fn in ways.items()}  # no plan: the single call
    names = list(ways)
    turn = len(totals_seen) % len(names)
    totals_seen.append(turn)
    for name in names[turn:] + names[:turn]:  # each variant first in turn
        totals[name] += statistics.median([timed(ways[name]) for _ in range(args.repeats + 1)][1:])
ms = {name: round(1e3 * t / len(forwards), 3) for name, t in totals.items()}
print({"forwards": len(forwards), "ms per forward and layer": ms})
print({name: round(totals["single"] / t, 2) for name, t in totals.items()})
