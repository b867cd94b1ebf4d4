"""The load test's markdown: one row per (concurrency, configuration), medians over the rounds.

A loop over HTTP on a 2-core machine varies by ±10-20 % from run to run (the same plain loop against
itself), so one run of each configuration cannot say whether speculation is slower than plain at a
load. Each round runs plain, speculative and plain again, in an order rotated from round to round;
× off is a configuration's tokens/s over the first plain loop of its own round, as the median
[min, max] over rounds, and the plain repeat's own ratio shows how wide noise alone makes it.
"""

from __future__ import annotations

import statistics

LOOPS = (("off", "off"), ("server", "server"), ("off (repeat)", "off"))  # label, speculative.method
MEDIANS = ("tokens_per_s", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s")


def rotated(turn: int) -> list[tuple[str, str]]:
    """The loops of round ``turn``, starting at a different one each round."""
    k = turn % len(LOOPS)
    return list(LOOPS[k:] + LOOPS[:k])


def label(row: dict) -> str:
    return row.get("label", row["method"])  # files from before rounds: one loop per method


def median(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def aggregate(loops: list[dict]) -> list[dict]:
    """One row per (concurrency, label), in run order: medians over rounds and the ratio to plain."""
    base = {(r["concurrency"], r.get("round", 0)): r["tokens_per_s"] for r in loops if label(r) == "off"}
    groups: dict[tuple[int, str], list[dict]] = {}
    for r in loops:
        groups.setdefault((r["concurrency"], label(r)), []).append(r)
    rows = []
    for (concurrency, name), group in groups.items():
        ratios = [r["tokens_per_s"] / base[concurrency, r.get("round", 0)] for r in group]
        rows.append(
            {"concurrency": concurrency, "label": name, "rounds": len(group)}
            | {k: median([r[k] for r in group]) for k in MEDIANS}
            | {"acceptance": median([r["draft_acceptance_rate"] for r in group])}
            | {"requests": group[0]["requests"], "failed": sum(r["failed"] for r in group)}
            | {"ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
        )
    order = {"off": 0, "server": 1, "off (repeat)": 2}
    return sorted(rows, key=lambda r: (r["concurrency"], order.get(r["label"], 3)))


def _weights(digest: str | None) -> str:
    """The drafter's weights named in the page, where it has any."""
    return f" (weights sha256 {digest})" if digest else ""


def markdown(report: dict) -> str:
    m, b = report["machine"], report["burst"]
    memory = " / ".join("–" if v is None else f"{v:.0f}" for v in b["rss_mib"])
    rounds = report.get("rounds", 1)
    lines = [
        "# specdec serve under load",
        "",
        f"Produced by `{m['command']}` at commit {m.get('commit')} on {m['date']} ({m['cpu']}, "
        f"{m['cores']} cores, torch {m['torch']}). Model {report['model']}, drafter "
        f"{report['drafter'] or '(none)'}{_weights(report.get('drafter_digest'))}, over HTTP on 127.0.0.1, "
        "streaming chat completions.",
        "",
        f"**Burst**: {b['streams']} concurrent streams (lengths 8-64, greedy and seeded sampling): "
        f"{b['failed']} failed, {b['differ_from_alone']} differ from the same request sent alone; server "
        f"memory (MiB) before / after the burst / at the end: {memory}.",
        "",
    ]
    rows = aggregate(report["loops"])
    lines += library_line(report, rows)
    lines += [
        f"Each concurrency ran {rounds} round(s) of plain (`off`), speculative (`server`: the server's "
        "drafter and γ policy) and plain again, in an order rotated from round to round; × off is the "
        "tokens/s ratio to the round's first plain loop, median [min, max] over rounds (other columns: "
        "medians); the plain repeat's ratio is what noise alone gives.",
        "",
        "| c | speculation | rounds × requests | failed | tok/s | × off [min, max] | TTFT p50 / p99 (s) "
        "| ITL p50 / p99 (ms) | accepted |",
        "|---:|---|---:|---:|---:|---|---|---|---:|",
    ]
    for r in rows:
        acc = "–" if r["acceptance"] is None else f"{r['acceptance']:.2f}"
        lines.append(
            f"| {r['concurrency']} | {r['label']} | {r['rounds']} × {r['requests']} | {r['failed']} | "
            f"{r['tokens_per_s']:.1f} | {r['ratio']:.2f}× [{r['ratio_min']:.2f}, {r['ratio_max']:.2f}] | "
            f"{fmt(r['ttft_p50_s'])} / {fmt(r['ttft_p99_s'])} | "
            f"{fmt(r['itl_p50_s'], 1000)} / {fmt(r['itl_p99_s'], 1000)} | {acc} |"
        )
    return "\n".join(lines) + "\n"


def library_line(report: dict, rows: list[dict]) -> list[str]:
    """The library's speedup on the concurrency-1 requests beside the server's (when it was measured)."""
    library = report.get("library_c1")
    server = [r["ratio"] for r in rows if r["concurrency"] == 1 and r["label"] == "server"]
    if library is None or not server:
        return []
    return [
        f"**One request, server against library**: the {library['requests']} requests of c = 1 through "
        f"`Pipeline.generate` in one process (no HTTP), plain then speculative each: "
        f"{library['speedup']:.2f}× ({library['tokens_per_s_off']:.1f} → "
        f"{library['tokens_per_s_speculative']:.1f} tok/s); the server's {server[0]:.2f}× (median).",
        "",
    ]


def fmt(value: float | None, scale: float = 1.0) -> str:
    return "–" if value is None else f"{value * scale:.2f}" if scale == 1.0 else f"{value * scale:.0f}"
