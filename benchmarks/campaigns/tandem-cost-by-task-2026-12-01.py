"""Session 2026-12-01 (fifty-seventh), issue 20: where Tandem + SPEED loses to speculative sampling with
the equal-budget draft, by task, from the records of the latest greedy results page (no new run).

On that page (`RESULTS.md`, `results/results_page_2026-11-30_1210.json`, eager rows) Tandem ran 1.10x
our plain against the int8 draft's 1.13x: 0.97x SpS, target 1.15x. Per task this prints, for each of
the two, the speedup over our plain decoding (token rates over the task's prompts), α (accepted /
proposed), tokens per target call, c (draft time per proposed token over plain decoding's time per
token after its prefill), drafting's share of the time and the prefill's mean seconds. From the
repository's root:
    python benchmarks/campaigns/tandem-cost-by-task-2026-12-01.py \
        > benchmarks/results/tandem_cost_by_task_2026-12-01.log
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

PAGE = Path(__file__).parents[1] / "results" / "results_page_2026-11-30_1210.json"
PLAIN = "ours-plain"
DRAFTERS = {
    "draft": "ours-sps[int8:vocab-2048:smollm2-135m-draft]",
    "tandem": "ours-sps[int8:vocab-2048:tandem:smollm2-135m-tandem]",
}
KEYS = (
    "new_tokens",
    "target_calls",
    "proposed_tokens",
    "accepted_tokens",
    "target_time",
    "draft_time",
    "overhead_time",
    "prefill_time",
)


def totals(records: list[dict]) -> dict:
    """Sums over records of the time, the prompts and the stats in :data:`KEYS` (per-row lists summed)."""
    out = collections.Counter(time=sum(r["time"] for r in records), prompts=len(records))
    for record in records:
        for key in KEYS:
            value = record["stats"].get(key) or 0
            out[key] += sum(value) if isinstance(value, list) else value
    return out


def main() -> None:
    records = [r for r in json.loads(PAGE.read_text())["records"] if r["engine"] == "eager"]
    tasks = sorted({r["task"] for r in records})
    print(f"records: {PAGE.name}; c is per proposed token, relative to plain decoding's time per token")
    for task in [*tasks, "all"]:
        chosen = [r for r in records if task in ("all", r["task"])]
        plain = totals([r for r in chosen if r["method"] == PLAIN])
        step = (plain["time"] - plain["prefill_time"]) / plain["new_tokens"]  # plain's seconds a token
        cells = [f"{task:14s}"]
        for name, method in DRAFTERS.items():
            run = totals([r for r in chosen if r["method"] == method])
            speedup = (run["new_tokens"] / run["time"]) / (plain["new_tokens"] / plain["time"])
            cells.append(
                f"{name} {speedup:.2f}x α {run['accepted_tokens'] / run['proposed_tokens']:.2f} "
                f"tok/call {run['new_tokens'] / run['target_calls']:.2f} "
                f"c {run['draft_time'] / run['proposed_tokens'] / step:.3f} "
                f"drafting {run['draft_time'] / run['time']:.0%} of the time "
                f"prefill {run['prefill_time'] / run['prompts']:.2f} s"
            )
        cells.append(f"plain prefill {plain['prefill_time'] / plain['prompts']:.2f} s")
        print(" | ".join(cells))
    print("over all prompts, seconds (target: verify calls after the prefill; overhead: the loop's own work)")
    for name, method in {"plain": PLAIN, **DRAFTERS}.items():
        run = totals([r for r in records if r["method"] == method])
        parts = ("target_time", "draft_time", "overhead_time", "prefill_time")
        print(
            f"{name:7s} {run['time']:.1f} s: "
            + ", ".join(f"{key.removesuffix('_time')} {run[key]:.1f}" for key in parts)
            + f"; {run['target_calls']} target calls, "
            + f"{run['target_time'] / run['target_calls'] * 1e3:.1f} ms each"
        )


if __name__ == "__main__":
    main()
