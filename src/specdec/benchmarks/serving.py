"""Continuous batching: requests arriving over time, plain vs speculative, at several concurrencies.

A closed loop of ``c`` clients: each finished request is replaced, before the next step, by the next
one waiting (the way vLLM's benchmark holds a maximum concurrency). Requests join one at a time, so
each prompt is prefilled alone and the prefill work is the same for every method (prefilled
together, prompts are padded to the longest, and which ones arrive together depends on how fast
each method finishes the others). Every configuration serves the same requests (Spec-Bench first
turns, chat template, greedy) on the step-wise loop (:class:`~specdec.decoders.loop.DraftVerifyLoop`),
so the rows compare aggregate tokens/s, per-request latency and time to first token at equal load,
with α and tokens per target call beside them. Every request's text is checked against the plain
run's at the same concurrency (greedy: identical, or the row says how many are).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.benchmarks.outputs import refuse_taken
from specdec.benchmarks.report import machine_info
from specdec.decoders import FixedGamma, PlainDecoding, Request, SpeculativeSampling, StopCriteria
from specdec.decoders.method import DecodingMethod
from specdec.drafters import Drafter, make_drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.inputs import positive_int
from specdec.models import load_model
from specdec.models.packaged import drafter_digest
from specdec.pipeline import Pipeline, eos_token_ids
from specdec.sampling import SamplingConfig, row_keys


@dataclass
class Timeline:
    """When one request was admitted, got its first token and finished."""

    admitted: float
    first: float | None = None
    done: float | None = None
    tokens: list[int] = field(default_factory=list)


def serve(
    method: DecodingMethod,
    engine: Engine,
    drafter: Drafter | None,
    prompts: list[list[int]],
    concurrency: int,
    stop: StopCriteria,
) -> tuple[list[Timeline], dict]:
    """Serve ``prompts`` with ``concurrency`` clients; their timelines (in prompt order) and the stats."""
    keys = row_keys(list(range(len(prompts))), 1)
    start = time.perf_counter()
    loop = method.loop(engine, drafter, Request(prompts[:1], SamplingConfig(), stop, keys[:1]))
    lines, waiting = {0: Timeline(start)}, list(range(1, len(prompts)))
    while loop.active or waiting:
        while waiting and len(loop.active) < concurrency:  # one by one: no prompt padded to another
            i, now = waiting.pop(0), time.perf_counter()
            (row,) = loop.admit([prompts[i]], [keys[i]], stop)
            lines[row] = Timeline(now)
        for out in loop.step():
            line, now = lines[out.row], time.perf_counter()
            line.tokens += out.tokens
            if out.tokens and line.first is None:
                line.first = now
            if out.finish_reason is not None:
                line.done = now
    result = loop.result()
    return [lines[row] for row in sorted(lines)], stats_row(result.stats, time.perf_counter() - start)


def stats_row(stats, wall: float) -> dict:
    return {
        "wall_s": wall,
        "prefill_s": stats.prefill_time,  # the prompts' prefills (the same work for every method)
        "new_tokens": stats.new_tokens,
        "alpha": stats.acceptance_rate,
        "tokens_per_target_call": stats.tokens_per_target_call,
        "target_calls": stats.target_calls,
        "proposed_tokens": stats.proposed_tokens,
    }


def summary(lines: list[Timeline], row: dict, plain: list[Timeline] | None) -> dict:
    latency = [line.done - line.admitted for line in lines]
    ttft = [line.first - line.admitted for line in lines if line.first is not None]
    identical = (
        None if plain is None else sum(a.tokens == b.tokens for a, b in zip(lines, plain, strict=True))
    )
    return {
        **row,
        "requests": len(lines),
        "tokens_per_s": row["new_tokens"] / row["wall_s"],
        "latency_p50_s": statistics.median(latency),
        "latency_p90_s": quantile(latency, 0.9),
        "ttft_p50_s": statistics.median(ttft),
        "ttft_p90_s": quantile(ttft, 0.9),
        "identical_to_plain": identical,
    }


def quantile(values: list[float], q: float) -> float:
    return float(torch.quantile(torch.tensor(values, dtype=torch.float64), q))


Config = tuple[str, str | None, Callable[[], object] | None]  # name, drafter spec, γ policy factory


def plan_configs(args: argparse.Namespace, specs: list[str]) -> list[Config]:
    """Plain, each drafter under ``--gamma``, each under every ``--cutoff``, and plain again (the noise)."""
    configs: list[Config] = [("plain", None, None)] + [("sps", spec, lambda: args.gamma) for spec in specs]
    for cutoff in args.cutoff:  # vLLM's rule beside the adaptive one: a fixed γ, off from a batch size
        fixed, _, off_from = cutoff.partition(":")
        if not (fixed.isdigit() and off_from.isdigit()):
            raise InvalidArgumentError(f"--cutoff takes GAMMA:ROWS (e.g. 4:4), got {cutoff!r}")
        fixed, off_from = int(fixed), int(off_from)
        name = f"sps γ={fixed}, off from {off_from} rows"
        configs += [(name, spec, lambda g=fixed, b=off_from: FixedGamma(g, off_from=b)) for spec in specs]
    return [*configs, ("plain (repeat)", None, None)]


def run_round(configs: list[Config], turn: int, engine: Engine, drafters: dict, prompts, concurrency, stop):
    """Every configuration once, starting at a different one each round (so none always runs first or
    last, when the machine may be in another state); each request's text checked against plain's."""
    k = turn % len(configs)
    served = {}
    for name, spec, policy in configs[k:] + configs[:k]:
        method = PlainDecoding() if spec is None else SpeculativeSampling(policy())
        served[name, spec] = serve(method, engine, drafters.get(spec), prompts, concurrency, stop)
    plain_lines = served["plain", None][0]
    return [
        {"method": name, "drafter": spec, "concurrency": concurrency, "round": turn}
        | summary(*served[name, spec], None if name == "plain" else plain_lines)
        for name, spec, _ in configs
    ]


def run_from_args(args: argparse.Namespace) -> dict:
    refuse_taken(args.out, args.markdown)
    if args.rounds < 1:
        raise InvalidArgumentError(f"--rounds must be >= 1, got {args.rounds}")
    loaded = load_model(args.model, cache_dir=args.cache_dir)
    stop = StopCriteria(args.max_new_tokens, eos_token_ids(loaded.model, loaded.tokenizer))
    pipe = Pipeline(loaded.model, loaded.tokenizer)  # its engine and its chat template
    engine = pipe.engine
    questions = load_spec_bench(args.spec_bench or spec_bench_path(), per_task=args.per_task)
    encoded = [pipe.encode(q["prompt"], chat=True) for q in questions]
    specs = [spec for spec in args.drafters.split(",") if spec]
    configs = plan_configs(args, specs)
    drafters = {spec: make_drafter(spec, loaded.model, loaded.tokenizer) for spec in specs}
    for drafter in drafters.values():
        drafter.attach(engine)
    report = {"machine": machine_info(), "model": loaded.source, "rounds": args.rounds, "runs": []}
    report["drafters"] = {spec: drafter_digest(spec) for spec in drafters}
    serve(PlainDecoding(), engine, None, encoded[:2], 2, stop)  # warm-up
    for concurrency in args.concurrency:
        count = max(args.min_requests, args.requests_per_client * concurrency)
        prompts = [encoded[i % len(encoded)] for i in range(count)]
        for turn in range(args.rounds):
            for run in run_round(configs, turn, engine, drafters, prompts, concurrency, stop):
                report["runs"].append(run)
                print(json.dumps(run), flush=True)
            write(report, args)  # after every round: a run stopped by its budget keeps what it measured
    return report


def write(report: dict, args: argparse.Namespace) -> None:
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    Path(args.markdown).write_text(markdown(report))


def aggregate(runs: list[dict]) -> list[dict]:
    """One row per (concurrency, method, drafter): medians over the rounds, and the speedup over plain
    of the same round as its median and range (plain's own repeat shows how wide noise alone makes it)."""
    plain = {(r["concurrency"], r.get("round", 0)): r["tokens_per_s"] for r in runs if r["method"] == "plain"}
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["concurrency"], r["method"], r["drafter"]), []).append(r)
    rows = []
    for (concurrency, method, drafter), group in groups.items():
        ratios = [r["tokens_per_s"] / plain[concurrency, r.get("round", 0)] for r in group]
        med = {k: statistics.median(r[k] for r in group) for k in MEDIANS}
        same = [r["identical_to_plain"] for r in group if r["identical_to_plain"] is not None]
        rows.append(
            {"concurrency": concurrency, "method": method, "drafter": drafter, "rounds": len(group)}
            | med
            | {"requests": group[0]["requests"], "speedup_median": statistics.median(ratios)}
            | {"speedup_min": min(ratios), "speedup_max": max(ratios)}
            | {"identical": sum(same) if same else None, "compared": len(same) * group[0]["requests"]}
        )
    return rows


MEDIANS = ("tokens_per_s", "latency_p50_s", "latency_p90_s", "ttft_p50_s", "ttft_p90_s", "alpha")
MEDIANS += ("tokens_per_target_call",)


def markdown(report: dict) -> str:
    m, rounds = report["machine"], report.get("rounds", 1)
    lines = [
        "# Continuous batching: requests arriving over time, plain vs speculative",
        "",
        f"Produced by `{m['command']}` at commit {m.get('commit')} on {m['date']} "
        f"({m['cpu']}, {m['cores']} cores, torch {m['torch']}, "
        f"allocator {m['allocator']}). Model {report['model']}; drafter weights (sha256, first 16 hex): "
        + ", ".join(f"`{k}` {v or '(no weights)'}" for k, v in report["drafters"].items())
        + ". A closed loop of c clients (each finished request replaced by the next before the next step), "
        "Spec-Bench first turns with the chat template, greedy; latency is admission to last token. "
        f"Every configuration ran in each of {rounds} round(s), in an order rotated from round to round; "
        "× plain is the tokens/s ratio to plain decoding at the same concurrency in the same round, as the "
        "median [min, max] over rounds (other columns: medians). Plain runs twice per round: its repeat's "
        "ratio is what noise alone gives.",
        "",
        "| c | method | drafter | requests | tok/s | × plain [min, max] | latency p50 / p90 (s) "
        "| TTFT p50 / p90 (s) | α | tokens / call | identical |",
        "|---:|---|---|---:|---:|---|---|---|---:|---:|---|",
    ]
    for r in aggregate(report["runs"]):
        same = "–" if r["identical"] is None else f"{r['identical']}/{r['compared']}"
        lines.append(
            f"| {r['concurrency']} | {r['method']} | {r['drafter'] or '–'} | {r['requests']} | "
            f"{r['tokens_per_s']:.1f} | {r['speedup_median']:.2f}× "
            f"[{r['speedup_min']:.2f}, {r['speedup_max']:.2f}] | "
            f"{r['latency_p50_s']:.2f} / {r['latency_p90_s']:.2f} | "
            f"{r['ttft_p50_s']:.2f} / {r['ttft_p90_s']:.2f} | "
            f"{r['alpha']:.2f} | {r['tokens_per_target_call']:.2f} | {same} |"
        )
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--drafters", default="prompt-lookup,int8:vocab-2048:smollm2-135m-draft")
    parser.add_argument("--concurrency", type=positive_int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--requests-per-client", type=positive_int, default=2, help="requests = this × c")
    parser.add_argument("--min-requests", type=positive_int, default=8)
    parser.add_argument("--max-new-tokens", type=positive_int, default=64)
    parser.add_argument("--gamma", default="adaptive", help="the SpS γ policy (adaptive: load-aware)")
    parser.add_argument(
        "--cutoff",
        action="append",
        default=[],
        metavar="GAMMA:ROWS",
        help="also run each drafter with a fixed γ and no drafting from ROWS rows on (vLLM's cut-off)",
    )
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=1,
        help="repeat every configuration this many times, order rotated",
    )
    parser.add_argument("--per-task", type=positive_int, default=12, help="Spec-Bench prompts per task")
    parser.add_argument("--spec-bench", type=Path, default=None)
    parser.add_argument("--out", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--cache-dir", default=None)
