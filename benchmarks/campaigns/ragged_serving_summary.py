"""Side by side: plain decoding served before and after the ragged attention plans
(`ragged-serving-ab-2026-11-28.sh`'s four records), as tokens/s per run (plain and its repeat), whole and
outside prefills, and the ratio new / old of the medians with the [min, max] over pairs of runs.

    python benchmarks/campaigns/ragged_serving_summary.py benchmarks/results/ragged_serving_ab_2026-11-28 \
        --commits "4b2c1e6 / b043efd" --markdown benchmarks/RAGGED_SERVING_AB_2026-11-28.md
"""

import argparse
import json
import statistics
from pathlib import Path


def rates(prefix: str, tree: str) -> dict[int, dict[str, list[float]]]:
    """Per concurrency, tokens/s of every plain run of ``tree``'s records (whole, outside prefills)."""
    out: dict[int, dict[str, list[float]]] = {}
    for path in sorted(Path(prefix).parent.glob(f"{Path(prefix).name}_{tree}_r*.json")):
        for run in json.loads(path.read_text())["runs"]:
            if run["method"] not in ("plain", "plain (repeat)"):
                continue
            slot = out.setdefault(run["concurrency"], {"whole": [], "decode": []})
            slot["whole"].append(run["tokens_per_s"])
            slot["decode"].append(run["new_tokens"] / (run["wall_s"] - run["prefill_s"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix")
    parser.add_argument("--commits", required=True, help="OLD NEW, as the A/B script was given them")
    parser.add_argument("--markdown", type=Path, required=True)
    parser.add_argument("--script", default="ragged-serving-ab-2026-11-28.sh", help="the A/B script that ran")
    args = parser.parse_args()
    old, new = rates(args.prefix, "old"), rates(args.prefix, "new")
    lines = [
        "# Ragged attention plans: plain decoding served before / after",
        "",
        f"Records `{args.prefix}_{{old,new}}_r*.json` (old / new: commits {args.commits})",
        f"(`benchmarks/campaigns/{args.script}`); each record holds plain and its repeat",
        "per concurrency. tok/s medians over the runs; new / old is the ratio of medians [min, max over",
        "every old × new pair]. *decode*: tokens over the time outside prefills.",
        "",
        "| c | measure | old tok/s (runs) | new tok/s (runs) | new / old [min, max] |",
        "|---:|---|---|---|---|",
    ]
    for concurrency in sorted(old):
        for measure in ("whole", "decode"):
            a, b = old[concurrency][measure], new[concurrency][measure]
            pairs = [y / x for x in a for y in b]
            ratio = statistics.median(b) / statistics.median(a)
            cells = [f"{statistics.median(x):.1f} ({', '.join(f'{y:.1f}' for y in x)})" for x in (a, b)]
            span = f"{ratio:.2f}× [{min(pairs):.2f}, {max(pairs):.2f}]"
            lines.append(f"| {concurrency} | {measure} | {cells[0]} | {cells[1]} | {span} |")
    args.markdown.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
