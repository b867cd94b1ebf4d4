"""``specdec bench bild``: BiLD's quality/latency trade-off against plain decoding and SpS, in one run.

Each *setup* is a large model with its small models: the default target with separate drafts, and
optionally an early-exit-trained model with its own first layers (``--early-exit``). For every
setup and prompt, plain decoding, lossless SpS with each small model and BiLD over the
(α_FB, α_RB) grid run back to back (interleaved, so machine drift hits all alike); a Tandem small
model (``tandem:PATH``) also generates standalone (Tandem §3, not verified) at ``--tandem-gamma``. Quality is
ROUGE-L against the CNN/DM references, plus agreement with the setup's own plain output on
CNN/DM and Spec-Bench. Latency is each method's total time over the setup's plain time.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

from specdec.benchmarks.bild_report import plot, summarize_sweep, write_sweep_markdown
from specdec.benchmarks.data import cnndm_path, load_cnndm, load_spec_bench, spec_bench_path
from specdec.benchmarks.outputs import add_output_arguments, claim_outputs
from specdec.benchmarks.progress import progress_bar
from specdec.benchmarks.report import machine_info, save_report, source_commit
from specdec.decoders import BiLD, DecodingMethod, PlainDecoding, SpeculativeSampling, TandemGeneration
from specdec.drafters import make_drafter
from specdec.errors import InvalidArgumentError
from specdec.inputs import non_negative_int, positive_int
from specdec.models import load_model
from specdec.models.packaged import drafter_digest
from specdec.pipeline import Pipeline


@dataclass(frozen=True)
class SweepMethod:
    name: str
    drafter: str | None = None  # None: plain decoding
    bild: BiLD | None = None  # None with a drafter: lossless SpS
    standalone: TandemGeneration | None = None  # a Tandem secondary generating on its own

    def decoding(self) -> DecodingMethod:
        if self.drafter is None:
            return PlainDecoding()
        return self.bild or self.standalone or SpeculativeSampling()


@dataclass
class Setup:
    name: str
    pipe: Pipeline
    drafters: dict
    methods: list[SweepMethod]


def _floats(text: str) -> list[float]:
    try:
        return [math.inf if v.strip() == "inf" else float(v) for v in text.split(",") if v.strip()]
    except ValueError as err:
        raise InvalidArgumentError(f"expected comma-separated numbers, got {text!r}") from err


def _specs(drafters: str) -> list[str]:
    return [d for d in drafters.split(",") if d]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--drafters", default="smollm2-135m-draft,prompt-lookup", help="small models")
    parser.add_argument(
        "--early-exit",
        default=None,
        metavar="MODEL:L",
        help="also sweep an early-exit-trained model with its first L layers as the small model",
    )
    parser.add_argument("--fallback", default="0.3,0.5,0.7", help="α_FB values")
    parser.add_argument("--rollback", default="2,4,6", help="α_RB values ('inf': no rollback)")
    parser.add_argument("--max-small-tokens", type=positive_int, default=10)
    parser.add_argument(
        "--tandem-gamma",
        default="3",
        help="block lengths of standalone Tandem generation, for each tandem:PATH small model "
        "(with and without the primary's free token)",
    )
    parser.add_argument("--articles", type=positive_int, default=6, help="CNN/DM articles")
    parser.add_argument("--article-words", type=positive_int, default=300)
    parser.add_argument(
        "--per-task", type=non_negative_int, default=1, help="Spec-Bench prompts per task (0: skip)"
    )
    parser.add_argument("--max-new-tokens", type=positive_int, default=64)
    parser.add_argument("--cnndm", type=Path, default=None)
    parser.add_argument("--spec-bench", type=Path, default=None)
    parser.add_argument("--cache-dir", default=None)
    add_output_arguments(parser, "bild_sweep", plot=True, from_json=True)


def plan(
    drafters: dict, fallbacks: list[float], rollbacks: list[float], cap: int, tandem_gammas: tuple = ()
) -> list[SweepMethod]:
    methods = [SweepMethod("plain")]
    for spec, drafter in drafters.items():
        methods.append(SweepMethod(f"sps[{spec}]", spec))
        for gamma in tandem_gammas if spec.startswith("tandem") else ():
            for free in (True, False):
                name = f"tandem[{spec}, γ {gamma}{'' if free else ', no free token'}]"
                methods.append(SweepMethod(name, spec, standalone=TandemGeneration(gamma, free)))
        # For a drafter without a confidence (prompt lookup) α_FB would change nothing.
        for fb in fallbacks if drafter.has_confidence else [0.0]:
            for rb in rollbacks:
                name = f"bild[{spec}, FB {fb:g}, RB {rb:g}]"
                methods.append(SweepMethod(name, spec, BiLD(fb, rb, cap)))
    return methods


def _setup(name: str, model: str, specs: list[str], args: argparse.Namespace) -> Setup:
    loaded = load_model(model, cache_dir=args.cache_dir)
    pipe = Pipeline(loaded.model, loaded.tokenizer)
    drafters = {s: make_drafter(s, loaded.model, loaded.tokenizer, cache_dir=args.cache_dir) for s in specs}
    gammas = tuple(int(g) for g in _floats(args.tandem_gamma))
    grid = plan(drafters, _floats(args.fallback), _floats(args.rollback), args.max_small_tokens, gammas)
    return Setup(name, pipe, drafters, grid)


def run_method(setup: Setup, method: SweepMethod, prompt: str, max_new_tokens: int) -> dict:
    pipe = setup.pipe if method.drafter is None else setup.pipe.with_drafter(setup.drafters[method.drafter])
    out = pipe.generate(prompt, method=method.decoding(), max_new_tokens=max_new_tokens, chat=True)
    return {"text": out.text, "tokens": out.token_ids[0], "stats": out.stats.as_dict()}


def run_from_args(args: argparse.Namespace) -> dict:
    claim_outputs(args, "bild_sweep")
    if args.from_json:
        report = json.loads(args.from_json.read_text())
        report["summary"] = summarize_sweep(report["records"])
        report["resummarised"] = {"date": machine_info()["date"], "commit": source_commit()}
        return _write(report, args)
    datasets = {"cnndm": load_cnndm(args.cnndm or cnndm_path(), args.articles, args.article_words)}
    if args.per_task > 0:
        rows = load_spec_bench(args.spec_bench or spec_bench_path(), args.per_task)
        datasets["spec_bench"] = [
            {"id": r["question_id"], "prompt": r["prompt"], "task": r["task"]} for r in rows
        ]
    setups = [_setup("separate drafts", args.model, _specs(args.drafters), args)]
    if args.early_exit:
        model, _, layers = args.early_exit.rpartition(":")
        if not model or not layers.isdigit():
            raise InvalidArgumentError(f"--early-exit expects MODEL:L, got {args.early_exit!r}")
        setups.append(_setup(f"early exit ({layers} layers)", model, [f"early-exit-{layers}"], args))
    records = _sweep(setups, datasets, args.max_new_tokens)
    report = {
        "machine": machine_info(),
        "config": _config(args),
        "methods": {
            s.name: [
                {
                    "name": m.name,
                    "drafter": m.drafter,
                    "bild": m.bild and vars(m.bild),
                    "standalone": m.standalone and vars(m.standalone),
                }
                for m in s.methods
            ]
            for s in setups
        },
        "summary": None,
        "prompts": {name: {p["id"]: p["prompt"] for p in prompts} for name, prompts in datasets.items()},
        "records": records,
    }
    save_report(report, args.out)  # the records first: neither a summary nor a plot that fails loses a sweep
    report["summary"] = summarize_sweep(records)
    return _write(report, args)


def _sweep(setups: list, datasets: dict[str, list[dict]], max_new_tokens: int) -> list[dict]:
    """Every setup's methods on every prompt of every dataset, after a warm-up call each: the records."""
    records = []
    total = sum(len(s.methods) for s in setups) * sum(len(v) for v in datasets.values())
    with progress_bar() as progress:
        task = progress.add_task("BiLD sweep", total=total)
        for setup in setups:
            for method in setup.methods:  # warm-up: first calls pay allocation and packing costs
                run_method(setup, method, "Hello!", 4)
            for dataset, prompts in datasets.items():
                for i, prompt in enumerate(prompts):
                    for method in setup.methods:
                        progress.update(task, description=f"{setup.name} {dataset} {i + 1}/{len(prompts)}")
                        result = run_method(setup, method, prompt["prompt"], max_new_tokens)
                        # The prompt's text is kept once (report["prompts"]), not in every method's record.
                        about = {k: v for k, v in prompt.items() if k != "prompt"}
                        records.append(
                            {
                                "setup": setup.name,
                                "dataset": dataset,
                                "method": method.name,
                                **about,
                                **result,
                            }
                        )
                        progress.advance(task)
    return records


def _config(args: argparse.Namespace) -> dict:
    """What a sweep's report records of its settings (the drafters with their weights' digests)."""
    return {
        "model": args.model,
        "drafters": args.drafters,
        "drafter_digests": {spec: drafter_digest(spec) for spec in _specs(args.drafters)},
        "early_exit": args.early_exit,
        "fallback": args.fallback,
        "rollback": args.rollback,
        "max_small_tokens": args.max_small_tokens,
        "tandem_gamma": args.tandem_gamma,
        "articles": args.articles,
        "article_words": args.article_words,
        "spec_bench_per_task": args.per_task,
        "max_new_tokens": args.max_new_tokens,
        "decoding": "greedy",
    }


def _write(report: dict, args: argparse.Namespace) -> dict:
    save_report(report, args.out)
    plot(report, args.plot)
    write_sweep_markdown(report, args.markdown, args.plot)
    print(args.markdown.read_text())
    return report
