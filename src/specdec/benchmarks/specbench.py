"""``specdec bench spec``: Spec-Bench speed of every method, side by side, in one run.

All methods see the same prompts (first turns, chat template applied) and the same
max_new_tokens, greedy: HF ``generate`` (plain; with ``--hf-compile`` also with HF's static cache and
compiled decoding step), HF assisted generation with the same drafts, our
plain decoding and our speculative sampling with each drafter. They run interleaved prompt by
prompt, in an order rotated from one prompt to the next, so machine drift and warm caches hit them
alike. Ratios, not absolute times, are the result, each with a bootstrap interval over prompts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

from specdec.benchmarks.data import load_spec_bench, prompt_seed, spec_bench_path
from specdec.benchmarks.plan import fast_only, fixed_gammas, plan_methods, rotated
from specdec.benchmarks.progress import progress_bar
from specdec.benchmarks.report import machine_info, save_report, summarize
from specdec.benchmarks.runner import Runner, static_cache_length
from specdec.benchmarks.spec_markdown import write_markdown
from specdec.drafters import make_drafter
from specdec.errors import InvalidArgumentError
from specdec.inputs import positive_int
from specdec.models import load_model, resolve_device, resolve_dtype
from specdec.models.packaged import BEST_DRAFTERS, drafter_digest

#: ``--drafters`` unless given: prompt lookup and drafters derived from the target itself (an int8 copy,
#: its first two layers); for a target with packaged drafters, its best one and the shipped draft instead.
DERIVED_DRAFTERS = "prompt-lookup,int8,first-2"


def default_drafters(model: str) -> str:
    if model not in BEST_DRAFTERS:
        return DERIVED_DRAFTERS
    return f"prompt-lookup,{BEST_DRAFTERS[model]},int8:vocab-2048:{model}-draft"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's options, in the groups ``--help`` lists them by."""
    _workload_arguments(parser)
    _methods_arguments(parser)
    _sampling_arguments(parser)
    _output_arguments(parser)


def _workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The prompts, the target and where it runs."""
    group = parser.add_argument_group("prompts, target")
    group.add_argument("--model", default="smollm2-135m")
    group.add_argument(
        "--per-task", type=positive_int, default=5, help="prompts per Spec-Bench task (6 tasks)"
    )
    group.add_argument("--limit", type=positive_int, default=None, help="cap the number of prompts")
    group.add_argument("--max-new-tokens", type=positive_int, default=128)
    group.add_argument("--spec-bench", type=Path, default=None, help="path to Spec-Bench question.jsonl")
    group.add_argument(
        "--device", default="cpu", help="where the target and model drafters run: cpu, cuda, cuda:N"
    )
    group.add_argument(
        "--dtype",
        default="float32",
        help="weights' dtype; greedy equality with HF plain is checked per prompt (the identical column)",
    )
    group.add_argument("--cache-dir", default=None)


def _methods_arguments(parser: argparse.ArgumentParser) -> None:
    """Which methods run beside our plain decoding, on which engines."""
    group = parser.add_argument_group("methods")
    group.add_argument(
        "--drafters",
        default=None,
        help="comma-separated drafter specs (default: prompt lookup, and the packaged target's best measured "
        "drafter and shipped draft; other targets: prompt lookup and drafters derived from the target)",
    )
    group.add_argument(
        "--heuristic-for",
        default="smollm2-135m-draft",
        help="drafters also run with HF's +2/-1 γ rule, to compare with the adaptive policy",
    )
    group.add_argument(
        "--fixed-gamma",
        type=fixed_gammas,
        default=(),
        help="comma-separated γ values every drafter (routed ones aside) also runs at, beside the adaptive "
        "policy: what the policy's choice of block length costs or gains",
    )
    group.add_argument("--no-hf", action="store_true", help="skip the HF transformers baselines")
    group.add_argument(
        "--engine",
        default="eager",
        help="our engines to run, comma-separated: eager (default) and/or fast (the target's verify "
        "blocks as static-shape steps under torch.compile; the time to build it, compile included, "
        "is reported)",
    )
    group.add_argument(
        "--fast-drafters",
        default=None,
        help="with --engine eager,fast: only these drafters (comma-separated, from --drafters) run on the "
        "fast engine too, beside its plain decoding (default: every drafter)",
    )
    group.add_argument(
        "--hf-compile",
        action="store_true",
        help="also run HF generate with a static cache and its decoding step under torch.compile "
        "(transformers' CompileConfig defaults; the compile happens in the warm-up, whose time is reported)",
    )
    group.add_argument(
        "--router-gamma-max",
        type=positive_int,
        default=8,
        help="the γ cap of drafters with a block-length router",
    )


def _sampling_arguments(parser: argparse.ArgumentParser) -> None:
    """Greedy by default; sampled runs and their verify rules."""
    group = parser.add_argument_group("sampling")
    group.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="0: greedy (default); > 0: sampled, seeded per prompt, without the HF baselines",
    )
    group.add_argument("--top-p", type=float, default=1.0)
    group.add_argument(
        "--num-samples",
        type=positive_int,
        default=1,
        help="completions per prompt for our methods (with --temperature > 0); tokens/s counts them all",
    )
    group.add_argument(
        "--verify",
        default="coupled",
        help="SpS verify rules to run when sampling: coupled, rejection or both",
    )


def _output_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the results go; runs never overwrite another run's files."""
    group = parser.add_argument_group("output")
    group.add_argument(
        "--out",
        type=Path,
        default=None,
        help="raw results JSON (default: benchmarks/results/specbench_<UTC date and time>.json)",
    )
    group.add_argument(
        "--markdown", type=Path, default=None, help="the table (default: the JSON's path with .md)"
    )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing --out / --markdown files (by default it refuses: runs never overwrite)",
    )
    group.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="re-summarise a results file (no runs) and rewrite its markdown",
    )
    group.add_argument(
        "--eval-report",
        type=Path,
        action="append",
        default=[],
        help="specdec eval draft JSON to tabulate too",
    )


def output_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """Where this run writes: dated names by default, and never over another run's files unless asked
    (re-summarising with ``--from-json`` rewrites that file's own table)."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d_%H%M")
    out = args.from_json or args.out or Path(f"benchmarks/results/specbench_{stamp}.json")
    markdown = args.markdown or out.with_suffix(".md")
    taken = [] if args.overwrite else [p for p in (out, markdown) if p.exists() and p != args.from_json]
    if taken and not (args.from_json and taken == [markdown]):
        raise InvalidArgumentError(
            f"{', '.join(map(str, taken))} already exist(s): a run does not overwrite another's results "
            "(choose new --out / --markdown paths, or pass --overwrite)"
        )
    return out, markdown


def run_from_args(args: argparse.Namespace) -> dict:
    out, markdown = output_paths(args)
    if args.from_json:
        report = json.loads(args.from_json.read_text())
        # the first prompt ran the methods in their own order (later prompts rotate it)
        methods = list(dict.fromkeys(record["method"] for record in report["records"]))
        report["summary"] = summarize(report["records"], methods)
        report["json_path"] = str(args.from_json)
        return _write(report, out, markdown)
    engines = tuple(e for e in args.engine.split(",") if e)
    if not engines or set(engines) - {"eager", "fast"}:
        raise InvalidArgumentError(f"--engine takes eager and/or fast, comma-separated; got {args.engine!r}")
    sampled = args.temperature > 0
    if args.num_samples != 1 and not sampled:
        raise InvalidArgumentError("--num-samples > 1 needs --temperature > 0 (greedy samples are all alike)")
    path = args.spec_bench or spec_bench_path()
    prompts = load_spec_bench(path, args.per_task)[: args.limit]
    device, dtype = resolve_device(args.device), resolve_dtype(args.dtype)
    loaded = load_model(args.model, cache_dir=args.cache_dir, device=device, dtype=dtype)
    placement = {"cache_dir": args.cache_dir, "device": device, "dtype": dtype}
    drafters = {
        spec: make_drafter(spec, loaded.model, loaded.tokenizer, **placement)
        for spec in (args.drafters or default_drafters(args.model)).split(",")
        if spec
    }
    sampling = {"temperature": args.temperature, "top_p": args.top_p} if sampled else {}
    verify = tuple(v for v in args.verify.split(",") if v) if sampled else ("coupled",)
    # HF samples with its own random stream: its texts and speed under sampling are not comparable.
    with_hf = not args.no_hf and not sampled
    heuristic_for = [d for d in args.heuristic_for.split(",") if d]
    options = (args.router_gamma_max, args.hf_compile, engines, args.fixed_gamma)
    methods = plan_methods(drafters, heuristic_for, with_hf, verify, *options, fast_only(args, drafters))

    def encode(text: str) -> list[int]:
        ids = loaded.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
        )
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    warm, encoded = encode("Hello!"), [encode(p["prompt"]) for p in prompts]
    cache_len = static_cache_length([len(ids) for ids in [warm, *encoded]], args.max_new_tokens)
    runner = Runner(
        loaded.model, loaded.tokenizer, drafters, sampling, args.num_samples, cache_len, "fast" in engines
    )
    records, warm_up = _measure(runner, methods, warm, list(zip(prompts, encoded, strict=True)), args)
    report = {
        "machine": machine_info(),
        "config": _config(args, loaded.source, device, dtype, drafters, engines, len(prompts), path),
        "warm_up_seconds": warm_up,
        "compile_seconds": runner.fast_build_seconds,
        "summary": None,
        "draft_evals": [json.loads(path.read_text()) | {"file": str(path)} for path in args.eval_report],
        "json_path": str(out),
        "records": records,
    }
    save_report(report, out)  # the records first: a run is tens of minutes
    report["summary"] = summarize(records, [m.name for m in methods])
    return _write(report, out, markdown)


def _measure(runner: Runner, methods: list, warm: list[int], prompts: list[tuple[dict, list[int]]], args):
    """Every method on every prompt (each prompt's methods in a rotated order), after two warm-up rounds;
    returns the per-prompt records and each method's warm-up seconds."""
    records, warm_up = [], {}
    with progress_bar() as progress:
        task = progress.add_task("warm-up", total=len(methods) * (len(prompts) + 2))
        # Warm-up: first calls pay one-time allocation, packing and compile costs. Twice over the methods:
        # a fast engine's graph with hidden states (a drafter's) makes its plain graph compile again at
        # its next call (dynamo's guards on transformers' output capturing), which the second round pays.
        for _ in range(2):
            for method in methods:
                start = time.perf_counter()
                runner.run(method, warm, 8)
                warm_up[method.name] = warm_up.get(method.name, 0.0) + time.perf_counter() - start
                progress.advance(task)
        for turn, (prompt, ids) in enumerate(prompts):
            for method in rotated(methods, turn):
                progress.update(task, description=f"prompt {turn + 1}/{len(prompts)} {method.name}")
                result = runner.run(method, ids, args.max_new_tokens, seed=prompt_seed(prompt["question_id"]))
                records.append(
                    {"method": method.name, "engine": method.engine, **prompt, "prompt_tokens": len(ids)}
                    | result
                )
                progress.advance(task)
    return records, warm_up


def _config(
    args, source: str, device, dtype, drafters: dict, engines: tuple, prompts: int, path: Path
) -> dict:
    """What a report records of its run's settings (the drafters with their weights' digests)."""
    return {
        "model": source,
        "device": str(device),
        "dtype": str(dtype).removeprefix("torch."),
        "drafters": list(drafters),
        "drafter_digests": {spec: drafter_digest(spec) for spec in drafters},
        "engines": list(engines),
        "prompts": prompts,
        "num_samples": args.num_samples,
        "per_task": args.per_task,
        "max_new_tokens": args.max_new_tokens,
        "decoding": (
            f"sampled: temperature {args.temperature}, top-p {args.top_p}, seed = hash of the question id"
            if args.temperature > 0
            else "greedy"
        ),
        "spec_bench": str(path),
    }


def _write(report: dict, out: Path, markdown: Path) -> dict:
    save_report(report, out)
    write_markdown(report, markdown)
    print(markdown.read_text())
    return report
