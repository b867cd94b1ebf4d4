"""``specdec eval tandem``: the paper's Table 1, accepted tokens per block and the budget curve, in one run.

Every model (the distilled draft, Tandem-CE, Tandem-Distil, ...) is measured on the same held-out
sequences of one or more primary caches: held-out target answers (the drafting situation) and,
optionally, held-out human text. Per cache: accuracy and cross-entropy against the ground-truth next
token, relative accuracy (top-1 agreement with the primary) and relative TV distance (mean TV between
the model's and the primary's next-token distributions), plus the tokens a greedy SPEED block of γ
accepts (γ = 3, 5, 7). The budget curve reads each training run's log (held-out agreement and accepted
tokens per block against training tokens) and plots Tandem against the baseline.

On the training cache (``--cache``) the sequences scored are its tail that training never saw
(``split`` with the runs' held-out fraction) minus the first ``eval_sequences`` the trainer used to
pick its best checkpoint, so the numbers here are not the ones a checkpoint was selected on; a cache
of text nothing was trained on (``--heldout-cache``) is scored whole.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import torch

from specdec.benchmarks.outputs import add_output_arguments, claim_outputs, relative_link
from specdec.benchmarks.report import machine_info
from specdec.drafters.factory import tandem_folder
from specdec.errors import InvalidArgumentError
from specdec.inputs import non_negative_int, positive_int
from specdec.models.loading import load_model
from specdec.models.packaged import MANIFEST, drafter_digest
from specdec.models.router import total_variation_topk
from specdec.models.tandem import CONFIG_FILE as TANDEM_CONFIG
from specdec.training.primary_cache import PrimaryCache, split
from specdec.training.tandem import load_checkpoint
from specdec.training.tandem_objective import evaluate_on_cache, student_logits


def _named(values: list[str], what: str) -> dict[str, Path]:
    out = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise InvalidArgumentError(f"{what} expects NAME=PATH, got {value!r}")
        out[name] = Path(path)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", action="append", required=True, metavar="NAME=PATH", help="a trained checkpoint"
    )
    parser.add_argument(
        "--cache",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="the training cache: scored on its held-out tail, minus the selection sequences",
    )
    parser.add_argument(
        "--heldout-cache",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a cache nothing was trained on (e.g. held-out text from `data text`): scored whole",
    )
    parser.add_argument(
        "--run", action="append", default=[], metavar="NAME=DIR", help="a training run for the budget curve"
    )
    parser.add_argument("--heldout-fraction", type=float, default=0.05, help="as the runs were trained")
    parser.add_argument(
        "--skip", type=non_negative_int, default=64, help="held-out sequences used for selection"
    )
    parser.add_argument(
        "--sequences", type=positive_int, default=256, help="at most this many held-out sequences"
    )
    parser.add_argument("--gamma-train", type=positive_int, default=2)
    add_output_arguments(parser, "tandem_eval", plot=True)


def heldout_range(cache: PrimaryCache, fraction: float, skip: int, limit: int) -> Sequence[int]:
    """The held-out tail, after the sequences checkpoint selection used (none left: all of it)."""
    _, heldout = split(cache, fraction)
    start = skip if skip < len(heldout) else 0
    return heldout[start : start + limit]


@torch.no_grad()
def table_one(model, cache: PrimaryCache, indices: Sequence[int], gamma_train: int, batch: int = 8) -> dict:
    """Accuracy and CE against the next token, agreement and mean TV against the primary (Table 1)."""
    was_training = model.training
    model.eval()
    correct = ce = agree = tv = positions = 0.0
    for start in range(0, len(indices), batch):
        data = cache.batch(indices[start : start + batch])
        mask = (data["next_is_answer"] & data["valid"])[:, :-1]
        logits = student_logits(model, data, gamma_train)[:, :-1].float()
        truth = data["tokens"][:, 1:]
        correct += ((logits.argmax(-1) == truth) & mask).sum().item()
        losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), truth, reduction="none")
        ce += (losses * mask).sum().item()
        agree += ((logits.argmax(-1) == data["topk_ids"][:, :-1, 0]) & mask).sum().item()
        distance = total_variation_topk(
            logits, data["topk_values"][:, :-1].float(), data["topk_ids"][:, :-1], data["logsumexp"][:, :-1]
        )
        tv += (distance * mask).sum().item()
        positions += mask.sum().item()
    model.train(was_training)
    n = max(positions, 1)
    return {
        "positions": int(positions),
        "accuracy_gt": correct / n,
        "ce_gt": ce / n,
        "relative_accuracy": agree / n,
        "relative_tv": tv / n,
    }


def load_scored(folder: Path) -> torch.nn.Module:
    """A training checkpoint, or a folder `train export` wrote (own tensors only, the rest shared with its
    base), rebuilt as the drafters load it: a shipped drafter is scored as it runs."""
    folder = tandem_folder(str(folder))  # an exported Tandem folder rebuilt; any other folder as it is
    if (folder / MANIFEST).is_file():
        return load_model(folder).model
    return load_checkpoint("tandem" if (folder / TANDEM_CONFIG).is_file() else "draft", folder)


def budget_curve(log: Path) -> list[dict]:
    """(training tokens, held-out agreement, accepted per block) at each evaluation of a run."""
    if not log.is_file():
        raise InvalidArgumentError(f"{log} not found: --run expects a `specdec train tandem` output folder")
    points = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if "heldout_agreement" in record:
            keys = ("step", "tokens_seen", "elapsed_s", "heldout_agreement", "heldout_alpha_topk")
            points.append(
                {k: record[k] for k in keys}
                | {k: v for k, v in record.items() if k.startswith("accepted_per_block")}
            )
    return points


def run_from_args(args: argparse.Namespace) -> dict:
    claim_outputs(args, "tandem_eval")
    models = _named(args.model, "--model")
    caches = {}
    for name, path in _named(args.cache, "--cache").items():
        cache = PrimaryCache(path)
        caches[name] = cache, heldout_range(cache, args.heldout_fraction, args.skip, args.sequences)
    for name, path in _named(args.heldout_cache, "--heldout-cache").items():
        cache = PrimaryCache(path)
        caches[name] = cache, range(min(len(cache), args.sequences))
    if not caches:
        raise InvalidArgumentError("eval tandem needs a --cache or a --heldout-cache to score on")
    runs = _named(args.run, "--run")
    tables: dict[str, dict[str, dict]] = {}
    for name, folder in models.items():
        model = load_scored(folder)
        for cache_name, (cache, indices) in caches.items():
            row = table_one(model, cache, indices, args.gamma_train)
            row |= evaluate_on_cache(model, cache, indices, args.gamma_train)
            row["sequences"] = [indices.start, indices.stop]
            tables.setdefault(cache_name, {})[name] = row
    report = {
        "machine": machine_info(),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "func"},
        "models": {k: str(v) for k, v in models.items()},
        "digests": {k: drafter_digest(str(v)) for k, v in models.items()},
        "tables": tables,
        "budget": {name: budget_curve(folder / "log.jsonl") for name, folder in runs.items()},
        "runs": {
            name: json.loads((folder / "train_config.json").read_text())
            for name, folder in runs.items()
            if (folder / "train_config.json").is_file()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    if report["budget"]:
        plot_budget(report["budget"], args.plot)
    write_markdown(report, args.markdown, args.plot if report["budget"] else None)
    print(args.markdown.read_text())
    return report


def plot_budget(budget: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, points in budget.items():
        tokens = [p["tokens_seen"] / 1e6 for p in points]
        axes[0].plot(tokens, [p["heldout_agreement"] for p in points], marker=".", label=name)
        axes[1].plot(tokens, [p["accepted_per_block_g5"] for p in points], marker=".", label=name)
    axes[0].set_ylabel("held-out agreement with the primary")
    axes[1].set_ylabel("accepted tokens per block, γ = 5")
    for ax in axes:
        ax.set_xlabel("training tokens (millions)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_markdown(report: dict, path: Path, plot_path: Path | None) -> None:
    machine = report["machine"]
    lines = [
        "# Tandem Transformers: Table 1, accepted tokens per block, budget curve",
        "",
        f"Produced by `{machine['command']}` at commit {machine.get('commit')} on {machine['date']} "
        f"({machine['cpu']}, {machine['cores']} cores, torch {machine['torch']}); weights (sha256 of the "
        "safetensors, first 16 hex): "
        + ", ".join(f"{name} {digest}" for name, digest in report.get("digests", {}).items())
        + ". Held-out sequences only (never trained on, not the ones "
        "checkpoints were selected on). Accuracy / CE: against the next token of the sequence (on target "
        "answers that is the target's own greedy choice); relative accuracy: top-1 agreement with the "
        "primary; relative TV: mean total variation to the primary's distribution (its top-64 exact, the "
        "rest as one lump: a lower bound). Accepted per block: tokens a greedy SPEED block of γ keeps.",
    ]
    for cache_name, rows in report["tables"].items():
        lines += [
            "",
            f"## {cache_name}",
            "",
            "| model | accuracy (GT) | CE (GT) | relative accuracy | relative TV | α ≥ (top-k) | "
            "accepted/block γ=3 | γ=5 | γ=7 | positions |",
            "|" + "---|" * 10,
        ]
        for name, r in rows.items():
            cells = [
                f"{100 * r['accuracy_gt']:.2f}",
                f"{r['ce_gt']:.3f}",
                f"{100 * r['relative_accuracy']:.2f}",
                f"{r['relative_tv']:.3f}",
                f"{r['heldout_alpha_topk']:.3f}",
                *(f"{r[f'accepted_per_block_g{g}']:.3f}" for g in (3, 5, 7)),
                str(r["positions"]),
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if plot_path is not None:
        lines += ["", "## Budget curve", "", f"![budget curve]({relative_link(plot_path, path.parent)})", ""]
        lines += [
            "| run | evaluations | training tokens | wall-clock (s) | best accepted/block γ=5 |",
            "|---|---|---|---|---|",
        ]
        for name, points in report["budget"].items():
            best = max(points, key=lambda p: p["accepted_per_block_g5"])
            last = points[-1]
            lines.append(
                f"| {name} | {len(points)} | {last['tokens_seen']:,} | {last['elapsed_s']:.0f} | "
                f"{best['accepted_per_block_g5']:.3f} (step {best['step']}) |"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
