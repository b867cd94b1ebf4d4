"""Where a `bench spec` run's time went, per method: prefill, target calls, drafting and the loop's upkeep.

Why: a speedup is Σ tokens / Σ time with the prompt's prefill inside both sides, so it mixes what speculation
changes (the decode: target calls, drafting, upkeep) with what it cannot (the prefill, the same work for every
method but a drafter's own pass over the prompt). Splitting the recorded times says which part a change can
move: the decode-only ratio is the ceiling of the end-to-end one, and per target call the draft and upkeep
milliseconds are what engine work on the loop can still take away.

    python benchmarks/campaigns/time_split.py benchmarks/results/hf_headline_2026-11-29_fast.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PARTS = ("prefill_time", "target_time", "draft_time", "overhead_time")


def split(records: list[dict]) -> dict[str, dict]:
    """Per method with recorded stats: summed seconds of each part, tokens and target calls."""
    out: dict[str, dict] = {}
    for record in records:
        stats = record.get("stats")
        if not stats:
            continue
        row = out.setdefault(
            record["method"], dict.fromkeys((*PARTS, "total_time", "new_tokens", "target_calls"), 0)
        )
        for key in row:
            row[key] += stats[key]
    return out


def table(rows: dict[str, dict]) -> str:
    plain = next((name for name in rows if "plain" in name and "sps" not in name), None)
    lines = [
        "| method | prefill share | ms per target call: target / draft / upkeep | decode speedup "
        "| end-to-end |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        calls, decode = max(row["target_calls"], 1), row["total_time"] - row["prefill_time"]
        per_call = " / ".join(f"{1e3 * row[k] / calls:.1f}" for k in PARTS[1:])
        ratios = ["–", "–"]
        if plain is not None:
            base = rows[plain]
            ratios = [
                f"{(base['total_time'] - base['prefill_time']) / decode:.2f}x",
                f"{base['total_time'] / row['total_time']:.2f}x",
            ]
        share = row["prefill_time"] / row["total_time"]
        lines.append(f"| {name} | {share:.0%} | {per_call} | {ratios[0]} | {ratios[1]} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(f"{path}\n\n{table(split(json.loads(Path(path).read_text())['records']))}")
