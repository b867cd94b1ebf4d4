"""Two rows of one `specdec bench spec` run compared head to head: the speedup of B over A (Σtokens/Σtime as
the report's) with the report's paired bootstrap interval over prompts, overall and per task, and whether both
rows' outputs are identical prompt by prompt. A drafter A/B is read this way
(both rows against the same plain decoding in the same run, so their ratio is the comparison that matters).

    python benchmarks/campaigns/paired_ab.py RESULTS.json "ours-sps[A]" "ours-sps[B]"
"""

from __future__ import annotations

import argparse
import json

from specdec.benchmarks.report import bootstrap_interval, tokens_per_second


def rows_of(records: list[dict], method: str) -> list[dict]:
    rows = [r for r in records if r["method"] == method]
    if not rows:
        known = sorted({r["method"] for r in records})
        raise SystemExit(f"no rows named {method!r}; the run has: {', '.join(known)}")
    return rows


def speedup(mine: list[dict], base: list[dict]) -> float:
    return tokens_per_second(mine) / tokens_per_second(base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("a", help="the reference row's method name")
    parser.add_argument("b", help="the compared row's method name")
    args = parser.parse_args()
    with open(args.results) as f:
        records = json.load(f)["records"]
    a, b = rows_of(records, args.a), rows_of(records, args.b)
    same = {r["question_id"]: r["tokens"] for r in a}
    identical = sum(r["tokens"] == same[r["question_id"]] for r in b)
    low, high = bootstrap_interval(b, a)
    print(
        f"{args.b} over {args.a}: {speedup(b, a):.3f}x [{low:.3f}, {high:.3f}] over {len(b)} prompts "
        f"(outputs identical on {identical}/{len(b)})"
    )
    for task in sorted({r["task"] for r in a}):
        mine, base = [r for r in b if r["task"] == task], [r for r in a if r["task"] == task]
        low, high = bootstrap_interval(mine, base)
        print(f"  {task}: {speedup(mine, base):.3f}x [{low:.3f}, {high:.3f}] ({len(mine)} prompts)")


if __name__ == "__main__":
    main()
