"""The markdown page of ``specdec bench engine`` (:mod:`specdec.benchmarks.engine_speed`) from its report."""

from __future__ import annotations


def _speed_cells(row: dict, first: float | None) -> str:
    """The tok/s, × first and of-bound cells; a rate noise swamped is said so, not printed as a number."""
    rate = row["decode_tok_s"]
    if not rate:
        return "unmeasured (T(N) ≤ T(1)) | — | —"
    ratio = f"{rate / first:.2f}x" if first else "—"
    return f"{rate:.1f} | {ratio} | {100 * row['share_of_bound']:.0f} %"


def markdown(report: dict) -> str:
    m, cfg = report["machine"], report["config"]
    where = m["gpu"] or f"{m['cpu']} ({', '.join(m['cpu_features'])}), {m['torch_threads']} torch threads"
    lines = [
        "# Engine speed: plain decoding of random-weight models",
        "",
        f"Produced by `{m['command']}` on {m['date']}: {where}; torch {m['torch']}, transformers "
        f"{m['transformers']}. Greedy, {cfg['prompt_tokens']}-token random prompt, decode speed "
        f"(N − 1) / (T(N) − T(1)) with N = {cfg['new_tokens']}, median of {cfg['repeats']} interleaved "
        f"rounds, {cfg['dtype']} on {cfg['device']}. Bound: measured copy bandwidth / weight bytes per "
        "step (see `specdec.benchmarks.engine_speed`). identical: the same tokens as the first row."
        + (
            f" Graphed engines pad every step to {cfg['graph_width']} tokens."
            if "graphs" in cfg["engines"] and "graph_width" in cfg
            else ""
        ),
        "",
        "| shape | params | weights (MB) | bandwidth (GB/s) | bound (tok/s) | runner | tok/s | × first "
        "| of bound | identical |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for shape, r in report["results"].items():
        first = next(iter(r["runners"].values()))["decode_tok_s"]
        for name, row in r["runners"].items():
            speed = _speed_cells(row, first)
            lines.append(
                f"| {shape} | {r['parameters'] / 1e6:.0f}M | {r['weight_bytes'] / 1e6:.0f} | "
                f"{r['copy_bandwidth_gb_s']:.1f} | {r['bound_tok_s']:.1f} | {name} | {speed} | "
                f"{'yes' if row['identical_to_first'] else 'no'} |"
            )
    for shape, r in report["results"].items():
        for name, row in r["runners"].items():
            if "graph_replay_ms" not in row or not row["decode_tok_s"]:
                continue
            replay, step = row["graph_replay_ms"], 1e3 / row["decode_tok_s"]
            lines += [
                "",
                f"{shape}, {name}: one replay of the captured step alone takes {replay:.2f} ms "
                f"({1e3 / replay:.0f} tok/s, {1e3 / replay / r['bound_tok_s']:.0%} of the bound); a decoded "
                f"token takes {step:.2f} ms, so {step - replay:.2f} ms of each is host work around the graph "
                "(masks, copies, choosing the token, stopping checks).",
            ]
    builds = {
        s: r["compiled_build_seconds"] for s, r in report["results"].items() if r["compiled_build_seconds"]
    }
    if builds:
        lines += [
            "",
            "Compiled engine built in " + ", ".join(f"{s}: {b:.1f} s" for s, b in builds.items()) + ".",
        ]
    return "\n".join(lines) + "\n"
