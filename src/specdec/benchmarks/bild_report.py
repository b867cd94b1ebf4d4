"""Summaries, the markdown table and the trade-off plot of ``specdec bench bild``."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from specdec.benchmarks.outputs import relative_link
from specdec.benchmarks.report import bootstrap_interval, mean_interval, tokens_per_second
from specdec.benchmarks.spec_markdown import digest_lines, fmt
from specdec.errors import SpecDecError


def _rouge_scorer():
    try:
        from rouge_score import rouge_scorer
    except ImportError as err:  # an optional extra: only the sweep needs it
        raise SpecDecError("the BiLD sweep needs rouge-score: pip install 'specdec[bench]'") from err
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _timed(record: dict) -> dict:
    """A sweep record as the speed helpers shared with ``bench spec`` read one."""
    return {"question_id": record["id"], "tokens": record["tokens"], "time": record["stats"]["total_time"]}


def summarize_sweep(records: list[dict]) -> list[dict]:
    """One row per (setup, dataset, method): speed against plain and SpS, quality, policy rates.

    Speedups are Σ tokens / Σ time over the prompts against the same prompts' plain decoding, with a
    paired 95 % bootstrap interval: a method that stops early is not made faster by its shorter texts.
    Latency is the time ratio alone (the paper's normalised latency)."""
    scorer = _rouge_scorer()
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        groups[(r["setup"], r["dataset"], r["method"])].append(r)
    plain_text = {(r["setup"], r["dataset"], r["id"]): r for r in records if r["method"] == "plain"}
    # Each text's ROUGE-L against its reference, once: plain decoding's is every method's baseline.
    reference = {_key(r): _rouge(scorer, r["reference"], r["text"]) for r in records if "reference" in r}
    rows = []
    for (setup, dataset, method), recs in groups.items():
        plain = [plain_text[(setup, dataset, r["id"])] for r in recs]
        mine, base = [_timed(r) for r in recs], [_timed(p) for p in plain]
        row = {
            "setup": setup,
            "dataset": dataset,
            "method": method,
            "prompts": len(recs),
            "time_s": sum(r["time"] for r in mine),
            "latency": sum(r["time"] for r in mine) / sum(p["time"] for p in base),
            "tokens_per_second": tokens_per_second(mine),
            "speedup_vs_plain": tokens_per_second(mine) / tokens_per_second(base),
            "speedup_vs_plain_ci95": bootstrap_interval(mine, base),
            **_quality(scorer, recs, plain, reference),
            **_policy_rates([r["stats"] for r in recs]),
        }
        rows.append(row)
    _add_sps_ratios(rows)
    return rows


def _key(record: dict) -> tuple:
    return record["setup"], record["dataset"], record["method"], record["id"]


def _rouge(scorer, reference: str, text: str) -> float:
    return 100 * scorer.score(reference, text)["rougeL"].fmeasure


def _quality(scorer, recs: list[dict], plain: list[dict], reference: dict[tuple, float]) -> dict:
    """Agreement with plain decoding's texts and, where there are references, ROUGE-L (``reference``: each
    text's, by record) and its change against plain decoding's on the same prompts (with an interval: 50
    articles move it by a point)."""
    pairs = list(zip(recs, plain, strict=True))
    out = {
        "agreement_rougeL": _mean([_rouge(scorer, p["text"], r["text"]) for r, p in pairs]),
        "identical": _mean([float(r["tokens"] == p["tokens"]) for r, p in pairs]),
        # ROUGE-L misses a text that loops; a lossy rule that keeps copied spans can make one.
        "repeated_4grams": 100 * _mean([repeated_ngrams(r["tokens"]) for r in recs]),
    }
    if all("reference" in r for r in recs):
        gained = [reference[_key(r)] - reference[_key(p)] for r, p in pairs]
        out |= {
            "rougeL": _mean([reference[_key(r)] for r in recs]),
            "rougeL_vs_plain": _mean(gained),
            "rougeL_vs_plain_ci95": mean_interval(gained),
        }
    return out


def repeated_ngrams(tokens: list[int], n: int = 4) -> float:
    """The share of a text's token n-grams that occurred earlier in it (0 for a text shorter than n)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def _policy_rates(stats: list[dict]) -> dict:
    """α, tokens per target call, fallback and rollback rates and the cost ratio c over a method's prompts."""
    calls = sum(s["target_calls"] for s in stats)
    # Records written before row_steps was kept come from batch-1 runs, where it equals target_calls.
    row_steps = sum(s.get("row_steps", s["target_calls"]) for s in stats)
    draft_calls = sum(s["draft_calls"] for s in stats)
    target_time, draft_time = sum(s["target_time"] for s in stats), sum(s["draft_time"] for s in stats)
    proposed = sum(s["proposed_tokens"] for s in stats)
    return {
        "alpha": sum(s["accepted_tokens"] for s in stats) / proposed if proposed else None,
        "tokens_per_target_call": sum(s["new_tokens"] for s in stats) / row_steps,
        "fallback_pct": 100 * _mean([s["fallback_rate"] for s in stats]) if proposed else None,
        "rollback_pct": 100 * _mean([s["rollback_rate"] for s in stats]) if proposed else None,
        "cost_ratio": (draft_time / draft_calls) / (target_time / calls) if draft_calls else None,
    }


def _small_model(method: str) -> str | None:
    if method == "plain":
        return None
    return method.split("[", 1)[1].split(",")[0].rstrip("]")


def _add_sps_ratios(rows: list[dict]) -> None:
    sps = {
        (r["setup"], r["dataset"], _small_model(r["method"])): r
        for r in rows
        if r["method"].startswith("sps[")
    }
    for r in rows:
        ref = sps.get((r["setup"], r["dataset"], _small_model(r["method"])))
        if r["method"].startswith(("bild[", "tandem[")) and ref is not None:
            r["speedup_vs_sps"] = r["tokens_per_second"] / ref["tokens_per_second"]
            if "rougeL" in r:
                r["rougeL_vs_sps"] = r["rougeL"] - ref["rougeL"]


def best_settings(rows: list[dict]) -> dict:
    """The issue's two targets on CNN/DM, per (setup, small model): the fastest BiLD setting within
    0.2 ROUGE-L of SpS with that small model, and within 1 point of plain decoding."""
    out = {}
    cnn = [r for r in rows if r["dataset"] == "cnndm"]
    plain = {r["setup"]: r for r in cnn if r["method"] == "plain"}
    for key in sorted(
        {(r["setup"], _small_model(r["method"])) for r in cnn if r["method"].startswith("bild[")}
    ):
        bild = [
            r
            for r in cnn
            if (r["setup"], _small_model(r["method"])) == key and r["method"].startswith("bild[")
        ]
        matched_sps = [r for r in bild if r.get("rougeL_vs_sps", float("-inf")) >= -0.2]
        within_point = [r for r in bild if r["rougeL"] >= plain[key[0]]["rougeL"] - 1.0]
        out[key] = {
            "vs_sps_at_matched_rouge": max(matched_sps, key=lambda r: r["speedup_vs_sps"], default=None),
            "vs_plain_within_1_point": max(within_point, key=lambda r: r["speedup_vs_plain"], default=None),
        }
    return out


def write_sweep_markdown(report: dict, path: Path, plot_path: Path | None) -> None:
    rows, machine, config = report["summary"], report["machine"], report["config"]
    swept = any(r["method"].startswith("bild[") for r in rows)
    title = "BiLD sweep: quality vs latency" if swept else "Quality vs latency (standalone Tandem)"
    lines = [
        f"# {title}",
        "",
        f"Produced by `{machine['command']}` on {machine['date']} ({machine['cpu']}, "
        f"{machine['cores']} cores, torch {machine['torch']}, transformers {machine['transformers']}). "
        f"Greedy, {config['max_new_tokens']} new tokens, {config['articles']} CNN/DM articles (first "
        f"{config['article_words']} words) and {config['spec_bench_per_task']} Spec-Bench prompt(s) per "
        "task; "
        "every method ran on every prompt in the same run, interleaved. Latency = total time / the "
        "setup's plain decoding time. ROUGE-L (F1 × 100) is against the CNN/DM references; agreement is "
        "ROUGE-L against the setup's own plain greedy output; repeated 4-grams: the mean share of a text's "
        "4-grams it wrote before (a looping text). α = accepted / proposed small-model tokens, "
        "c = time of a small-model call / time of a large-model call.",
        "",
        f"- source commit: {machine.get('commit') or 'not recorded'}"
        + _resummarised(report.get("resummarised")),
        *digest_lines(config.get("drafter_digests")),
        "",
    ]
    if plot_path is not None:
        lines += [f"![quality vs latency]({relative_link(plot_path, path.parent)})", ""]
    lines += ["## Targets (CNN/DM)", ""] if swept else []
    for (setup, small), best in best_settings(rows).items():
        a, b = best["vs_sps_at_matched_rouge"], best["vs_plain_within_1_point"]
        lines.append(
            f"- **{setup}, {small}**: fastest BiLD within 0.2 ROUGE-L of SpS with the same small model: "
            + (f"`{a['method']}`, {a['speedup_vs_sps']:.2f}× SpS (target ≥ 1.2×)" if a else "none")
            + "; fastest within 1 point of plain decoding: "
            + (f"`{b['method']}`, {_speedup(b)} plain (target ≥ 2×)" if b else "none")
            + "."
        )
    header = (
        "| setup | method | latency | speedup vs plain [95 %] | vs SpS | ROUGE-L | − plain's [95 %] | "
        "agreement | identical | repeated 4-grams % | α | tokens/call | fallback % | rollback % | c |"
    )
    for dataset in ("cnndm", "spec_bench"):
        subset = [r for r in rows if r["dataset"] == dataset]
        if not subset:
            continue
        lines += ["", f"## {'CNN/DM' if dataset == 'cnndm' else 'Spec-Bench'}", "", header, "|" + "---|" * 15]
        for r in subset:
            lines.append(
                f"| {r['setup']} | {r['method']} | {r['latency']:.2f} | {_speedup(r)} | "
                f"{fmt(r.get('speedup_vs_sps'))} | {fmt(r.get('rougeL'), '.1f')} | {_quality_change(r)} | "
                f"{r['agreement_rougeL']:.1f} | {r['identical']:.0%} | "
                f"{fmt(r.get('repeated_4grams'), '.1f')} | {fmt(r['alpha'])} | "
                f"{r['tokens_per_target_call']:.2f} | {fmt(r['fallback_pct'], '.0f')} | "
                f"{fmt(r['rollback_pct'], '.0f')} | {fmt(r['cost_ratio'])} |"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _resummarised(when: dict | None) -> str:
    """Where the table was summarised again from the same records by later code (``--from-json``)."""
    return f"; table summarised again from its records at {when['commit']} on {when['date']}" if when else ""


def _speedup(row: dict) -> str:
    """The speedup over plain decoding with its interval (results summarised before intervals: none)."""
    interval = row.get("speedup_vs_plain_ci95")
    low_high = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
    return f"{row['speedup_vs_plain']:.2f}×{low_high}"


def _quality_change(row: dict) -> str:
    """ROUGE-L minus plain decoding's on the same articles, with its interval; – off CNN/DM."""
    if "rougeL_vs_plain_ci95" not in row:
        return "–"
    low, high = row["rougeL_vs_plain_ci95"]
    return f"{row['rougeL_vs_plain']:+.1f} [{low:+.1f}, {high:+.1f}]"


def plot(report: dict, path: Path) -> None:
    """Quality vs normalised latency per dataset, like the paper's Figure 4."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["summary"]
    datasets = [d for d in ("cnndm", "spec_bench") if any(r["dataset"] == d for r in rows)]
    fig, axes = plt.subplots(1, len(datasets), figsize=(7 * len(datasets), 5.5), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        key = "rougeL" if dataset == "cnndm" else "agreement_rougeL"
        subset = [r for r in rows if r["dataset"] == dataset]
        colours = {}
        for r in subset:
            small = _small_model(r["method"])
            label = f"{r['setup']}: {small}" if small else f"{r['setup']}: plain"
            colour = colours.setdefault((r["setup"], small), f"C{len(colours)}")
            if r["method"] == "plain":
                ax.scatter(r["latency"], r[key], marker="*", s=220, color="black", zorder=3)
                ax.annotate(f"plain ({r['setup']})", (r["latency"], r[key]), fontsize=8)
                if dataset == "cnndm":
                    ax.axhline(r[key] - 1.0, color="grey", linestyle="--", linewidth=0.8)
            elif r["method"].startswith("sps["):
                ax.scatter(r["latency"], r[key], marker="s", s=80, color=colour, edgecolor="black", zorder=3)
                ax.annotate("SpS", (r["latency"], r[key]), fontsize=8)
            else:
                ax.scatter(r["latency"], r[key], marker="o", color=colour, alpha=0.75, label=label)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=8, title="BiLD small model (● BiLD, ■ SpS)")
        ax.set_xlabel("normalised latency (time / plain decoding time)")
        ax.set_ylabel("ROUGE-L vs reference" if dataset == "cnndm" else "ROUGE-L vs plain output")
        title = "CNN/DM (dashed: 1 point below plain)" if dataset == "cnndm" else "Spec-Bench"
        ax.set_title(title)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
