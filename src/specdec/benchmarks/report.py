"""Benchmark records into summary numbers (speedups with bootstrap intervals, α, c, T(γ+1)/T(1), ceilings),
and what every results file records of where it ran (machine, commit, allocator)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import torch
import transformers


def machine_info() -> dict:
    cpu, flags = platform.processor(), set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        lines = cpuinfo.read_text().splitlines()
        names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
        cpu = names[0] if names else cpu
        flags = {f for line in lines if line.startswith("flags") for f in line.split(":", 1)[1].split()}
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        # Speed depends on these more than on the model name: bf16 and AMX change what is fast.
        "cpu_features": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags],
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        # Where a GPU did the work the CPU line alone misleads (a GPU campaign's host is any Xeon).
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        # A caching allocator changes CPU training speed several-fold (see cli.train.allocator_hint).
        "allocator": allocator(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "command": "specdec " + " ".join(sys.argv[1:]) if sys.argv else "",
        "commit": source_commit(),
    }


def save_report(report: dict, path: Path) -> None:
    """``report`` as JSON at ``path`` (its folder made): a run saves its records before it summarises them,
    so a summary that fails loses nothing (``--from-json`` summarises them again)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str))


def source_commit() -> str | None:
    """The git commit of the specdec source that ran (with "+dirty" for uncommitted changes), or None
    outside a checkout: a result names the code that produced it."""
    here = Path(__file__).parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "."], cwd=here, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def allocator() -> str:
    """The malloc in use: a preloaded library (with its ``MALLOC_CONF``) or glibc's."""
    preloaded = [Path(lib).name for lib in os.environ.get("LD_PRELOAD", "").split() if "malloc" in lib]
    if not preloaded:
        return "glibc"
    conf = os.environ.get("MALLOC_CONF")
    return " ".join(preloaded) + (f" (MALLOC_CONF={conf})" if conf else "")


BOOTSTRAP_RESAMPLES = 2000


def _total(rows: list[dict], key: str) -> float:
    return sum(r["stats"][key] for r in rows)


def tokens_per_second(rows: list[dict]) -> float:
    """Σ tokens / Σ time over a method's prompt records: the rate every speedup in a report divides."""
    return sum(len(r["tokens"]) for r in rows) / sum(r["time"] for r in rows)


def bootstrap_interval(mine: list[dict], base: list[dict], level: float = 0.95, seed: int = 0) -> list[float]:
    """Percentile interval of the speedup Σtokens/Σtime over Σtokens_base/Σtime_base when the prompts
    are resampled with replacement (paired: a resample draws the same prompts for both methods)."""
    by_prompt = {r["question_id"]: r for r in base}
    pairs = [(r, by_prompt[r["question_id"]]) for r in mine]
    values = torch.tensor(
        [[len(a["tokens"]), a["time"], len(b["tokens"]), b["time"]] for a, b in pairs], dtype=torch.float64
    )

    def speedup(resampled: torch.Tensor) -> torch.Tensor:
        sums = resampled.sum(dim=1)  # [resamples, 4]
        return (sums[:, 0] / sums[:, 1]) / (sums[:, 2] / sums[:, 3])

    return _percentile_interval(values, speedup, level, seed)


def mean_interval(values: list[float], level: float = 0.95, seed: int = 0) -> list[float]:
    """Percentile interval of the mean of per-prompt ``values`` (say, a quality difference against the
    baseline on the same prompt) when the prompts are resampled with replacement."""
    data = torch.tensor(values, dtype=torch.float64)
    return _percentile_interval(data, lambda resampled: resampled.mean(dim=1), level, seed)


def _percentile_interval(data: torch.Tensor, statistic, level: float, seed: int) -> list[float]:
    """The ``level`` percentile interval of ``statistic`` over ``BOOTSTRAP_RESAMPLES`` resamples of the
    prompts (``data``'s rows) with replacement; ``statistic`` maps ``[resamples, prompts, ...]`` to
    ``[resamples]``."""
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(0, len(data), (BOOTSTRAP_RESAMPLES, len(data)), generator=generator)
    tail = (1 - level) / 2
    return torch.quantile(
        statistic(data[picks]), torch.tensor([tail, 1 - tail], dtype=torch.float64)
    ).tolist()


def summarize(records: list[dict], methods: list[str]) -> dict:
    by_method: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_method[r["method"]].append(r)
    # Our plain decoding on each engine run, the eager one first when it ran (it does unless --engine fast).
    plains = sorted((k for k in by_method if k == "ours-plain" or k.startswith("ours-plain[")), key=len)
    reference = "hf-plain" if "hf-plain" in by_method else plains[0]
    ref_tokens = {r["question_id"]: r["tokens"] for r in by_method[reference]}

    summary = {}
    hf = by_method.get("hf-plain")
    for name in methods:
        rows = by_method[name]
        # Our rows compare with plain decoding on the same engine (eager or fast); HF rows with the first run.
        engine = rows[0].get("engine", "eager")
        plain = (
            by_method.get("ours-plain" if engine == "eager" else f"ours-plain[{engine}]")
            or by_method[plains[0]]
        )
        t1 = _total(plain, "target_time") / max(1, _total(plain, "target_calls"))
        own = {r["question_id"]: r["tokens"] for r in plain}
        entry = {
            "tokens": sum(len(r["tokens"]) for r in rows),
            "time": sum(r["time"] for r in rows),
            "tokens_per_second": tokens_per_second(rows),
            "speedup_vs_hf_plain": tokens_per_second(rows) / tokens_per_second(hf) if hf else None,
            "speedup_vs_hf_plain_ci95": bootstrap_interval(rows, hf) if hf else None,
            "speedup_vs_ours_plain": tokens_per_second(rows) / tokens_per_second(plain),
            "speedup_vs_ours_plain_ci95": bootstrap_interval(rows, plain),
            "identical_to_reference": sum(r["tokens"] == ref_tokens[r["question_id"]] for r in rows)
            / len(rows),
            "identical_to_our_plain": sum(r["tokens"] == own[r["question_id"]] for r in rows) / len(rows),
            "by_task": {},
        }
        tasks = sorted({r["task"] for r in rows})
        for task in tasks:
            mine = [r for r in rows if r["task"] == task]
            base = [r for r in by_method[reference] if r["task"] == task]
            entry["by_task"][task] = tokens_per_second(mine) / tokens_per_second(base)
        if rows[0]["stats"] is not None and _total(rows, "proposed_tokens"):
            proposed, row_steps = _total(rows, "proposed_tokens"), _total(rows, "new_tokens")
            steps = sum(
                r["stats"]["new_tokens"] / max(r["stats"]["tokens_per_target_call"], 1e-9) for r in rows
            )
            gamma = proposed / steps
            c = _total(rows, "draft_time") / proposed / t1
            verify = _total(rows, "target_time") / _total(rows, "target_calls") / t1
            # From what was measured, not from α: the chain formula (1 − α^(γ+1)) / (1 − α) undercounts
            # a tree's or a lookup's tokens per call (siblings count in γ), so it bounded nothing for them
            entry.update(
                alpha=_total(rows, "accepted_tokens") / proposed,
                mean_gamma=gamma,
                tokens_per_target_call=row_steps / steps,
                cost_ratio_c=c,
                verify_cost_ratio=verify,
                ceiling=row_steps / steps / (verify + gamma * c),
            )
        summary[name] = entry
    summary["_reference"] = reference
    return summary
