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
import json
import time
from pathlib import Path

from specdec.benchmarks.data import load_spec_bench, prompt_seed, spec_bench_path
from specdec.benchmarks.outputs import claim_outputs
from specdec.benchmarks.plan import fast_only, plan_methods, rotated
from specdec.benchmarks.progress import progress_bar
from specdec.benchmarks.report import machine_info, save_report, summarize
from specdec.benchmarks.runner import Runner, static_cache_length
from specdec.benchmarks.spec_markdown import write_markdown
from specdec.benchmarks.specbench_options import (
    methods_arguments,
    output_arguments,
    sampling_arguments,
    workload_arguments,
)
from specdec.drafters import make_drafter
from specdec.errors import InvalidArgumentError
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
    for group in (workload_arguments, methods_arguments, sampling_arguments, output_arguments):
        group(parser)


def run_from_args(args: argparse.Namespace) -> dict:
    claim_outputs(args, "specbench")
    out, markdown = args.out, args.markdown
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
