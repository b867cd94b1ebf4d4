"""Session 2026-11-28 (thirty-sixth), CAMPAIGN next run 5: what the ragged plans do for served plain decoding,
in one process. `bench serving` at a6e13f6 against 75730d0 (ragged-serving-ab-2026-11-28b.sh) measured decode
1.24× [0.92, 1.52] at c = 64 but 0.89× [0.79, 1.02] at c = 16, with the machine's speed drifting ~30 % between
rounds. Here the same workload (ragged-plan-log-2026-11-28b.py's: 2 × c Spec-Bench first turns, chat
template, greedy, 128 new tokens, all waiting at the start) is served with `attention.plan_for` as it is
("plans"), with a long row's own call counted 4× dearer (`ragged.ROW_CALL_COST` 2048: "dear rows") and
returning None ("no plans"), the variants in turn, first in turn, --rounds rounds per concurrency; or, with
--row-costs, with the plans at each of those costs ("cost N") and without. Prints one JSON line per run and
the medians' ratios to "no plans", whole and outside prefills. Machine to itself:
    python benchmarks/campaigns/ragged-serve-ab-2026-11-28c.py --concurrency 16 64 --rounds 2
    python benchmarks/campaigns/ragged-serve-ab-2026-11-28c.py --concurrency 16 --row-costs 512 1024 2048
"""

import argparse
import json
import statistics

from served_workload import requests, served_workload

from specdec.benchmarks.serving import serve
from specdec.decoders import PlainDecoding
from specdec.engine import attention, ragged

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
parser.add_argument("--rounds", type=int, default=2)
parser.add_argument("--row-costs", type=float, nargs="*", help="plans at these ROW_CALL_COST values instead")
args = parser.parse_args()
pipe, stop, encoded = served_workload()
real_plan, row_cost = attention.plan_for, ragged.ROW_CALL_COST
VARIANTS = {
    "plans": (real_plan, row_cost),
    "dear rows": (real_plan, 4 * row_cost),
    "no plans": (lambda mask: None, row_cost),
}
if args.row_costs:
    VARIANTS = {f"cost {cost:g}": (real_plan, cost) for cost in args.row_costs} | {
        "no plans": VARIANTS["no plans"]
    }
rates: dict[tuple[int, str], dict[str, list[float]]] = {}
for concurrency in args.concurrency:
    prompts = requests(encoded, concurrency)
    names = list(VARIANTS)
    for round_ in range(args.rounds):
        turn = round_ % len(names)
        for name in names[turn:] + names[:turn]:
            attention.plan_for, ragged.ROW_CALL_COST = VARIANTS[name]
            _, stats = serve(PlainDecoding(), pipe.engine, None, prompts, concurrency, stop)
            whole = stats["new_tokens"] / stats["wall_s"]
            decode = stats["new_tokens"] / (stats["wall_s"] - stats["prefill_s"])
            slot = rates.setdefault((concurrency, name), {"whole": [], "decode": []})
            slot["whole"].append(whole)
            slot["decode"].append(decode)
            print(
                json.dumps({"concurrency": concurrency, "variant": name, "round": round_} | stats), flush=True
            )
for concurrency in args.concurrency:
    base = rates[(concurrency, "no plans")]
    for name in VARIANTS:
        mine = rates[(concurrency, name)]
        ratio = {k: round(statistics.median(mine[k]) / statistics.median(base[k]), 3) for k in mine}
        print(
            {
                "concurrency": concurrency,
                "variant": name,
                "tok/s": {k: [round(r, 1) for r in v] for k, v in mine.items()},
            }
            | {"ratio to no plans": ratio}
        )
