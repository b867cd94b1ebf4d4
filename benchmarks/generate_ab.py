"""Batch ``Pipeline.generate`` of two source trees, A/B in one run: is the step-wise engine's batch
generation as fast as the engine before it?

Each tree runs in its own interpreter (``PYTHONPATH=TREE/src``), in interleaved rounds (A B A B …, so
drift of the machine hits both alike), on the same Spec-Bench first turns (chat template, greedy) at
each batch size, plain and with each drafter (default: prompt lookup, which has no weights, so both
trees run the same drafter; packaged drafters are read from each tree's own package). A round is one
timed ``generate`` call per configuration after a warm-up call. Writes JSON and markdown: the
median time per configuration and tree, their ratio, and whether the two trees' texts are identical.

    python benchmarks/generate_ab.py --tree before=/work/old --tree after=/work/main \\
        --out benchmarks/results/generate_ab_DATE.json --markdown benchmarks/GENERATE_AB_DATE.md

Needs ``../shared`` (Spec-Bench prompts) and the built-in model; a research script, not part of the package.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def configs(args: argparse.Namespace) -> list[tuple[int, str]]:
    """(batch, method) pairs: plain and ``sps:DRAFTER`` for each drafter, at each batch size."""
    methods = ["plain", *(f"sps:{d}" for d in args.drafters.split(","))]
    return [(batch, method) for batch in args.batches for method in methods]


def worker(args: argparse.Namespace) -> None:
    """Time one generate call per configuration (after one warm-up each); JSON lines on stdout."""
    import torch

    from specdec.benchmarks.data import load_spec_bench, spec_bench_path
    from specdec.decoders import PlainDecoding, SpeculativeSampling
    from specdec.drafters import make_drafter
    from specdec.models import load_model
    from specdec.pipeline import Pipeline

    torch.manual_seed(0)
    loaded = load_model("smollm2-135m")
    plain = Pipeline(loaded.model, loaded.tokenizer)
    gamma = int(args.gamma) if args.gamma.isdigit() else args.gamma
    pipes = {"plain": (plain, PlainDecoding())}
    for spec in args.drafters.split(","):
        drafter = make_drafter(spec, loaded.model, loaded.tokenizer)
        pipes[f"sps:{spec}"] = (plain.with_drafter(drafter), SpeculativeSampling(gamma))
    prompts = [q["prompt"] for q in load_spec_bench(spec_bench_path(), per_task=args.per_task)]
    if len(prompts) < max(args.batches):
        raise SystemExit(f"{len(prompts)} prompts for a batch of {max(args.batches)}: raise --per-task")
    for batch, name in configs(args):
        pipe, method = pipes[name]
        chosen = prompts[:batch]
        pipe.generate(chosen, method=method, max_new_tokens=8, chat=True)  # warm-up
        start = time.perf_counter()
        result = pipe.generate(chosen, method=method, max_new_tokens=args.max_new_tokens, chat=True)
        seconds = time.perf_counter() - start
        tokens = [list(map(int, ids)) for ids in result.token_ids]
        print(json.dumps({"batch": batch, "method": name, "seconds": seconds, "tokens": tokens}), flush=True)


def run_tree(src: Path, args: argparse.Namespace) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(src / "src")}
    command = [sys.executable, __file__, "--worker", "--per-task", str(args.per_task)]
    command += ["--max-new-tokens", str(args.max_new_tokens), "--drafters", args.drafters]
    command += ["--gamma", args.gamma, "--batches", *map(str, args.batches)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def commit_of(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a source tree (twice)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--per-task",
        type=int,
        default=3,
        help="Spec-Bench prompts per task (6 tasks; at least the largest batch in all)",
    )
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--drafters", default="prompt-lookup", help="comma-separated drafter specs")
    parser.add_argument("--gamma", default="4", help="γ: an integer or a policy (adaptive, heuristic)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--out")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if len(args.tree) != 2 or not args.out or not args.markdown:
        parser.error("give two --tree NAME=PATH, --out and --markdown")
    if Path(args.out).exists() or Path(args.markdown).exists():
        parser.error(f"{args.out} or {args.markdown} exists: a run never overwrites another's results")
    trees = dict(spec.split("=", 1) for spec in args.tree)
    runs: dict[str, list[list[dict]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, path in trees.items():
            runs[name].append(run_tree(Path(path), args))
    report = summarise(trees, runs, args)
    Path(args.out).write_text(json.dumps(report, indent=1))
    Path(args.markdown).write_text(markdown(report))


def summarise(trees: dict[str, str], runs: dict[str, list[list[dict]]], args: argparse.Namespace) -> dict:
    from specdec.benchmarks.report import machine_info

    (a, b) = trees
    rows = []
    for i, (batch, method) in enumerate(configs(args)):
        times = {name: [rnd[i]["seconds"] for rnd in runs[name]] for name in trees}
        medians = {name: statistics.median(values) for name, values in times.items()}
        same = runs[a][0][i]["tokens"] == runs[b][0][i]["tokens"]
        tokens = sum(len(t) for t in runs[b][0][i]["tokens"])
        rows.append(
            {
                "batch": batch,
                "method": method,
                "times_s": times,
                "median_s": medians,
                "new_tokens": tokens,
                "ratio": medians[b] / medians[a],
                "identical": same,
            }
        )
    machine = {**machine_info(), "command": "python benchmarks/generate_ab.py " + " ".join(sys.argv[1:])}
    info = {"machine": machine, "rounds": args.rounds, "max_new_tokens": args.max_new_tokens}
    info |= {"drafters": args.drafters.split(","), "gamma": args.gamma}
    return {
        **info,
        "trees": {name: {"path": p, "commit": commit_of(Path(p))} for name, p in trees.items()},
        "rows": rows,
    }


def markdown(report: dict) -> str:
    m, (a, b) = report["machine"], list(report["trees"])
    commits = ", ".join(f"{name} = {t['commit']}" for name, t in report["trees"].items())
    lines = [
        f"# Batch generate, {a} vs {b}",
        "",
        f"Produced by `{m['command']}` on {m['date']} ({m['cpu']}, {m['cores']} cores, torch {m['torch']}, "
        f"allocator {m['allocator']}); trees {commits}. {report['rounds']} interleaved rounds, each tree in "
        f"its own interpreter; one timed `Pipeline.generate` per configuration and round (after a warm-up "
        f"call), Spec-Bench first turns, chat template, greedy, {report['max_new_tokens']} new tokens; "
        f"drafters {', '.join(report.get('drafters', ['prompt-lookup']))}, γ {report.get('gamma', 4)}. "
        "Medians over rounds; ratio < 1: the second tree is faster.",
        "",
        f"| batch | method | {a} (s) | {b} (s) | {b} / {a} | identical |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['batch']} | {r['method']} | {r['median_s'][a]:.2f} | {r['median_s'][b]:.2f} | "
            f"{r['ratio']:.3f} | {'yes' if r['identical'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
