"""``specdec bench``: Spec-Bench speed of every method, side by side, in one run.

All methods see the same prompts (first turns, chat template applied) and the same
max_new_tokens, greedy: HF ``generate`` (plain; with ``--hf-compile`` also with HF's static cache and
compiled decoding step), HF assisted generation with the same drafts, our
plain decoding and our speculative sampling with each drafter. They run interleaved prompt by
prompt, in an order rotated from one prompt to the next, so machine drift and warm caches hit them
alike. Ratios, not absolute times, are the result, each with a bootstrap interval over prompts.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import CompileConfig, StaticCache

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.benchmarks.progress import progress_bar
from specdec.benchmarks.report import machine_info, summarize, write_markdown
from specdec.decoders import PlainDecoding, SpeculativeSampling
from specdec.decoders.stats import sync_device
from specdec.drafters import ModelDrafter, PromptLookupDrafter, make_drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.models import load_model, resolve_device, resolve_dtype
from specdec.pipeline import Pipeline

DEFAULT_DRAFTERS = "prompt-lookup,int8,first-2,smollm2-135m-draft"


@dataclass(frozen=True)
class BenchMethod:
    name: str
    kind: str  # "hf-plain", "hf-static-compile", "hf-assisted", "plain" or "sps"
    drafter: str | None = None
    gamma: str = "adaptive"
    verify: str = "coupled"
    engine: str = "eager"  # "fast": the target's verify blocks compiled


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--drafters", default=DEFAULT_DRAFTERS, help="comma-separated drafter specs")
    parser.add_argument("--per-task", type=int, default=5, help="prompts per Spec-Bench task (6 tasks)")
    parser.add_argument("--limit", type=int, default=None, help="cap the number of prompts")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument(
        "--heuristic-for",
        default="smollm2-135m-draft",
        help="drafters also run with HF's +2/-1 γ rule, to compare with the adaptive policy",
    )
    parser.add_argument("--no-hf", action="store_true", help="skip the HF transformers baselines")
    parser.add_argument(
        "--engine",
        default="eager",
        help="our engines to run, comma-separated: eager (default) and/or fast (the target's verify "
        "blocks as static-shape steps under torch.compile; the time to build it, compile included, "
        "is reported)",
    )
    parser.add_argument(
        "--hf-compile",
        action="store_true",
        help="also run HF generate with a static cache and its decoding step under torch.compile "
        "(transformers' CompileConfig defaults; the compile happens in the warm-up, whose time is reported)",
    )
    parser.add_argument(
        "--router-gamma-max", type=int, default=8, help="the γ cap of drafters with a block-length router"
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="0: greedy (default); > 0: sampled, seeded per prompt, without the HF baselines",
    )
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument(
        "--num-samples",
        type=int,
        default=1,
        help="completions per prompt for our methods (with --temperature > 0); tokens/s counts them all",
    )
    parser.add_argument(
        "--verify",
        default="coupled",
        help="SpS verify rules to run when sampling: coupled, rejection or both",
    )
    parser.add_argument(
        "--device", default="cpu", help="where the target and model drafters run: cpu, cuda, cuda:N"
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        help="weights' dtype; greedy equality with HF plain is checked per prompt (the identical column)",
    )
    parser.add_argument("--spec-bench", type=Path, default=None, help="path to Spec-Bench question.jsonl")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/specbench.json"))
    parser.add_argument("--markdown", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="re-summarise a results file (no runs) and rewrite its markdown",
    )
    parser.add_argument(
        "--eval-report",
        type=Path,
        action="append",
        default=[],
        help="specdec eval-draft JSON to tabulate too",
    )


def has_hf_equivalent(drafter) -> bool:
    """HF assisted generation takes an independent assistant model or prompt lookup, nothing else
    (not drafters that read the target's states, like Tandem or an early exit, and not a model
    drafter's trees or trimmed head: a row under that name would run a different drafter)."""
    if isinstance(drafter, ModelDrafter):
        return drafter.tree_width == 1 and drafter.vocab is None
    return isinstance(drafter, PromptLookupDrafter)


def plan_methods(
    drafters: dict,
    heuristic_for: list[str],
    with_hf: bool,
    verify: tuple[str, ...] = ("coupled",),
    router_gamma_max: int = 8,
    hf_compile: bool = False,
    engines: tuple[str, ...] = ("eager",),
) -> list[BenchMethod]:
    """Every method of the run. A drafter with its own block-length router (``tandem+router:``) runs at
    a fixed γ_max that the router cuts short; every other drafter under the adaptive γ policy. Our
    methods run once per engine; the eager engine's rows keep their plain names."""
    methods = [BenchMethod("hf-plain", "hf-plain")] if with_hf else []
    if with_hf and hf_compile:
        methods.append(BenchMethod("hf-static-compile", "hf-static-compile"))
    for engine in engines:
        tag = "" if engine == "eager" else f", {engine}"
        methods.append(BenchMethod("ours-plain" + (f"[{engine}]" if tag else ""), "plain", engine=engine))
    for spec, drafter in drafters.items():
        if with_hf and has_hf_equivalent(drafter):
            methods.append(BenchMethod(f"hf-assisted[{spec}]", "hf-assisted", spec))
        routed = getattr(drafter, "router", None) is not None
        cap = f", γ ≤ {router_gamma_max}" if routed else ""
        for engine in engines:
            tag = "" if engine == "eager" else f", {engine}"
            for rule in verify:
                suffix = ("" if rule == "coupled" else f", {rule}") + cap + tag
                gamma = str(router_gamma_max) if routed else "adaptive"
                methods.append(
                    BenchMethod(f"ours-sps[{spec}{suffix}]", "sps", spec, gamma, verify=rule, engine=engine)
                )
            if spec in heuristic_for:
                methods.append(
                    BenchMethod(f"ours-sps[{spec}, +2/-1{tag}]", "sps", spec, "heuristic", engine=engine)
                )
    return methods


def rotated(methods: list[BenchMethod], turn: int) -> list[BenchMethod]:
    """Every method, starting at a different one each prompt, so none always runs first or last."""
    k = turn % len(methods)
    return methods[k:] + methods[:k]


class Runner:
    """Holds the models and drafters once; runs one method on one prompt."""

    def __init__(
        self,
        model,
        tokenizer,
        drafters: dict,
        sampling: dict,
        num_samples: int = 1,
        static_cache_len: int = 0,
        fast: bool = False,
    ):
        self.model, self.tokenizer, self.sampling = model, tokenizer, sampling
        self.num_samples, self.drafters = num_samples, drafters
        self.pipes = {"eager": Pipeline(model, tokenizer)}
        # The fast target compiles its verify graph as it is built (its build time is reported);
        # on CPU drafters step eagerly (lean) under both targets, so the rows share them; on CUDA the
        # fast rows' model drafters replay CUDA graphs too (an eager step there is launch-bound).
        self.fast_build_seconds: float | None = None
        self.fast_drafters = drafters
        if fast:
            started = time.perf_counter()
            self.pipes["fast"] = Pipeline(model, tokenizer, compile=True)
            self.fast_build_seconds = time.perf_counter() - started
            if model.device.type == "cuda":
                self.fast_drafters = {name: graphed(d) for name, d in drafters.items()}
        self.static_cache_len = static_cache_len
        self._compiled = None

    def run(self, method: BenchMethod, prompt_ids: list[int], max_new_tokens: int, seed: int = 0) -> dict:
        if method.kind.startswith("hf"):
            return self._run_hf(method, prompt_ids, max_new_tokens)
        if method.kind == "plain":
            pipe, decoding = self.pipes[method.engine], PlainDecoding()
        else:
            drafters = self.fast_drafters if method.engine == "fast" else self.drafters
            pipe = self.pipes[method.engine].with_drafter(drafters[method.drafter])
            gamma = int(method.gamma) if method.gamma.isdigit() else method.gamma
            decoding = SpeculativeSampling(gamma, method.verify)
        out = pipe.generate(
            prompt_ids,
            method=decoding,
            max_new_tokens=max_new_tokens,
            seed=seed,
            num_samples=self.num_samples,
            **self.sampling,
        )
        tokens = [t for row in out.token_ids for t in row]  # every sample's tokens, in order
        return {"tokens": tokens, "time": out.stats.total_time, "stats": out.stats.as_dict()}

    def _run_hf(self, method: BenchMethod, prompt_ids: list[int], max_new_tokens: int) -> dict:
        kwargs = dict(
            max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
        )
        model = self.model
        if method.kind == "hf-static-compile":
            model = self._compiled = self._compiled or compiled_decoding(self.model)
            # One cache length for every prompt: its shape is what the compiled step specialises on.
            kwargs["past_key_values"] = StaticCache(
                config=self.model.config, max_cache_len=self.static_cache_len
            )
        if method.kind == "hf-assisted":
            drafter = self.drafters[method.drafter]
            if isinstance(drafter, PromptLookupDrafter):
                kwargs["prompt_lookup_num_tokens"] = 10  # HF's documented setting
            elif isinstance(drafter, ModelDrafter):
                kwargs["assistant_model"] = drafter.model
            else:
                raise ValueError(f"no HF equivalent for drafter {method.drafter}")
        ids = torch.tensor([prompt_ids], device=self.model.device)
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
        sync_device(ids.device)
        elapsed = time.perf_counter() - start
        return {"tokens": out[0, len(prompt_ids) :].tolist(), "time": elapsed, "stats": None}


def graphed(drafter):
    """A model drafter's copy whose own engine replays CUDA graphs (others as they are)."""
    if not isinstance(drafter, ModelDrafter):
        return drafter
    fast = copy.copy(drafter)
    fast.engine = Engine(drafter.engine.model, pack_weights=False)
    fast.engine.capture_graphs()
    return fast


def compiled_decoding(model):
    """HF's compiled configuration: a view of ``model`` whose one-token (decoding) forwards run under
    ``torch.compile`` with transformers' ``CompileConfig`` defaults, prefill eager, as ``generate``
    does by itself on GPUs with a static cache (on CPU it only does so behind a private flag)."""
    config = CompileConfig()
    compiled = torch.compile(
        model.forward,
        fullgraph=config.fullgraph,
        dynamic=config.dynamic,
        backend=config.backend,
        mode=config.mode,
        options=config.options,
    )
    eager = model.forward

    def forward(*args, **kwargs):
        ids = kwargs.get("input_ids")
        return (compiled if ids is not None and ids.shape[1] == 1 else eager)(*args, **kwargs)

    view = copy.copy(model)  # shares every module and weight; only ``forward`` differs
    view.forward = forward
    return view


def static_cache_length(prompt_lengths: list[int], max_new_tokens: int, multiple: int = 256) -> int:
    """The one static cache length that holds every prompt and its answer, rounded up."""
    longest = max(prompt_lengths) + max_new_tokens
    return -(-longest // multiple) * multiple


def run_from_args(args: argparse.Namespace) -> dict:
    if args.from_json:
        report = json.loads(args.from_json.read_text())
        methods = [name for name in report["summary"] if not name.startswith("_")]
        report["summary"] = summarize(report["records"], methods)
        report["json_path"] = str(args.from_json)
        return _write(report, args.from_json, args.markdown)
    engines = tuple(e for e in args.engine.split(",") if e)
    if not engines or set(engines) - {"eager", "fast"}:
        raise InvalidArgumentError(f"--engine takes eager and/or fast, comma-separated; got {args.engine!r}")
    path = args.spec_bench or spec_bench_path()
    prompts = load_spec_bench(path, args.per_task)[: args.limit]
    device, dtype = resolve_device(args.device), resolve_dtype(args.dtype)
    loaded = load_model(args.model, cache_dir=args.cache_dir, device=device, dtype=dtype)
    placement = {"cache_dir": args.cache_dir, "device": device, "dtype": dtype}
    drafters = {
        spec: make_drafter(spec, loaded.model, loaded.tokenizer, **placement)
        for spec in args.drafters.split(",")
        if spec
    }
    sampled = args.temperature > 0
    if args.num_samples != 1 and not sampled:
        raise InvalidArgumentError("--num-samples > 1 needs --temperature > 0 (greedy samples are all alike)")
    sampling = {"temperature": args.temperature, "top_p": args.top_p} if sampled else {}
    verify = tuple(v for v in args.verify.split(",") if v) if sampled else ("coupled",)
    # HF samples with its own random stream: its texts and speed under sampling are not comparable.
    with_hf = not args.no_hf and not sampled
    heuristic_for = [d for d in args.heuristic_for.split(",") if d]
    methods = plan_methods(
        drafters, heuristic_for, with_hf, verify, args.router_gamma_max, args.hf_compile, engines
    )

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
    compile_s = runner.fast_build_seconds

    records, warm_up = [], {}
    with progress_bar() as progress:
        task = progress.add_task("warm-up", total=len(methods) * (len(prompts) + 1))
        for method in methods:  # warm-up: first calls pay one-time allocation, packing and compile costs
            start = time.perf_counter()
            runner.run(method, warm, 8)
            warm_up[method.name] = time.perf_counter() - start
            progress.advance(task)
        for turn, (prompt, ids) in enumerate(zip(prompts, encoded, strict=True)):
            for method in rotated(methods, turn):
                progress.update(task, description=f"prompt {turn + 1}/{len(prompts)} {method.name}")
                result = runner.run(method, ids, args.max_new_tokens, seed=prompt["question_id"])
                records.append(
                    {"method": method.name, "engine": method.engine, **prompt, "prompt_tokens": len(ids)}
                    | result
                )
                progress.advance(task)

    report = {
        "machine": machine_info(),
        "config": {
            "model": loaded.source,
            "device": str(device),
            "dtype": str(dtype).removeprefix("torch."),
            "drafters": list(drafters),
            "engines": list(engines),
            "prompts": len(prompts),
            "num_samples": args.num_samples,
            "per_task": args.per_task,
            "max_new_tokens": args.max_new_tokens,
            "decoding": (
                f"sampled: temperature {args.temperature}, top-p {args.top_p}, seed = question id"
                if sampled
                else "greedy"
            ),
            "spec_bench": str(path),
        },
        "warm_up_seconds": warm_up,
        "compile_seconds": compile_s,
        "summary": summarize(records, [m.name for m in methods]),
        "draft_evals": [json.loads(path.read_text()) | {"file": str(path)} for path in args.eval_report],
        "json_path": str(args.out),
        "records": records,
    }
    return _write(report, args.out, args.markdown)


def _write(report: dict, out: Path, markdown: Path) -> dict:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    write_markdown(report, markdown)
    print(markdown.read_text())
    return report
