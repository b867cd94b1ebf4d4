"""Session 2026-11-28 (thirty-sixth), CAMPAIGN next run 5: what the ragged plans read in a served batch once
rows are right-aligned (joining prompts and compacted rows end at the write column). As
ragged-plan-log-2026-11-28.py (plain decoding of `bench serving`'s workload, 128 Spec-Bench first turns, chat
template, greedy, 128 new tokens, at c = 64, `attention.plan_for` wrapped to log the keys each way reads, by
`ragged.plan_cost`), and it writes every fourth several-row forward's first visible key columns and key
columns to --dump, the served distribution the attention probe times plans on. Machine to itself:
    python benchmarks/campaigns/ragged-plan-log-2026-11-28b.py --concurrency 64 --dump FILE.json
"""

import argparse
import json

from served_workload import requests, served_workload

from specdec.benchmarks.serving import serve
from specdec.decoders import PlainDecoding
from specdec.engine import attention
from specdec.engine.ragged import first_visible, plan_cost

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--concurrency", type=int, default=64)
parser.add_argument("--dump", required=True)
args = parser.parse_args()
pipe, stop, encoded = served_workload()
prompts = requests(encoded, args.concurrency)
totals = {"forwards": 0, "planned": 0, "single": 0, "plan": 0, "floor": 0, "visible": 0}
shapes, dumped = [], []
planned = attention.plan_for


def logged(mask):
    plan = planned(mask)
    if mask.shape[0] > 1:
        rows, columns = mask.shape[0], mask.shape[-1]
        first = first_visible(mask)
        if totals["forwards"] % 4 == 0:
            dumped.append({"queries": mask.shape[2], "columns": columns, "first": first.tolist()})
        totals["forwards"] += 1
        totals["single"] += rows * columns
        totals["floor"] += int((columns - first).sum())
        totals["visible"] += int(mask.any(dim=2).sum())
        shapes.append((rows, mask.shape[2], columns))
        if plan is None:
            totals["plan"] += rows * columns
        else:
            totals["planned"] += 1
            totals["plan"] += plan_cost(rows, columns, plan.cut, list(plan.starts))
    return plan


attention.plan_for = logged
_, stats = serve(PlainDecoding(), pipe.engine, None, prompts, args.concurrency, stop)
share = {k: round(totals[k] / totals["single"], 3) for k in ("plan", "floor", "visible")}
middle = sorted(shapes)[len(shapes) // 2] if shapes else None
print({"concurrency": args.concurrency, "requests": len(prompts)} | totals | {"share_of_single": share})
rate = round(stats["new_tokens"] / stats["wall_s"], 1)
print({"median forward (rows, queries, key columns)": middle, "tokens/s": rate})
with open(args.dump, "w") as f:
    json.dump({"concurrency": args.concurrency, "forwards": dumped}, f)
