"""Where a one-token engine step spends its time, for the target and for a draft (issue 11's profile).

For each model: median wall time of a one-token ``Engine.extend`` after a 256-token context, and a
torch.profiler breakdown of the same steps by operator (self CPU time): the linear kernels (the work
a fused runtime would still do) against everything else (transformers' per-op eager overhead, mask
and position bookkeeping, Python). Writes JSON + markdown. ``MODEL@compile`` and
``MODEL@compile-freezing`` run the engine's model through ``torch.compile`` (inductor, dynamic
shapes: the cache length grows every step; the latter with inductor's weight freezing, on unpacked
weights, since inductor cannot lower the prepacked oneDNN linear); the first run's time, compile
included, is reported.

    python benchmarks/profile_step.py --models target,smollm2-135m-draft,vocab-2048:smollm2-135m-draft
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from specdec.benchmarks.report import machine_info
from specdec.benchmarks.step_timing import primed_token, timed_steps
from specdec.drafters import ModelDrafter, make_drafter
from specdec.engine import Engine
from specdec.models import load_model

LINEAR_OPS = (
    "mkldnn::_linear_pointwise",
    "mkl::_mkl_linear",
    "aten::addmm",
    "aten::mm",
    "aten::linear",
    "aten::matmul",
)


def engine_for(spec: str, target) -> Engine:
    """The engine a decoder would drive: the target's own, or the drafter's (trimmed head included)."""
    spec, _, variant = spec.partition("@")
    if variant not in ("", "compile", "compile-freezing"):
        raise ValueError(f"unknown variant {variant!r}: use @compile or @compile-freezing")
    if variant:
        import torch._inductor.config as inductor_config

        inductor_config.freezing = variant == "compile-freezing"
    if spec == "target":
        engine = Engine(target.model, pack_weights=False if variant else None)
    else:
        drafter = make_drafter(spec, target.model, target.tokenizer)
        engine = drafter.engine
        if variant:  # a model drafter's model, unpacked
            engine = ModelDrafter(drafter.model, vocab=drafter.vocab, pack_weights=False).engine
    if variant:
        engine.model = torch.compile(engine.model, dynamic=True)
    return engine


def profile_engine(engine: Engine, context: int, steps: int) -> dict:
    token = primed_token(engine, context, 2 * steps + 8)
    timed_steps(engine, token, 5)  # warm-up
    times = timed_steps(engine, token, steps)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        timed_steps(engine, token, steps)
    ops = [(e.key, e.self_cpu_time_total / steps / 1000.0, e.count / steps) for e in prof.key_averages()]
    total = sum(t for _, t, _ in ops)
    linear = sum(t for k, t, _ in ops if k in LINEAR_OPS)
    top = sorted(ops, key=lambda o: -o[1])[:12]
    return {
        "step_ms": statistics.median(times) * 1000,
        "profiled_ms": total,
        "linear_ms": linear,
        "ops_per_step": sum(n for _, _, n in ops),
        "top_ops": [{"op": k, "self_ms": t, "calls": n} for k, t, n in top],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument("--models", default="target,smollm2-135m-draft,vocab-2048:smollm2-135m-draft")
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/profile_step.json"))
    parser.add_argument("--markdown", type=Path, default=Path("benchmarks/PROFILE_STEP.md"))
    args = parser.parse_args()
    target = load_model(args.target)
    rows = {}
    for spec in args.models.split(","):
        started = time.perf_counter()  # set-up and compile included: what a first run costs
        rows[spec] = profile_engine(engine_for(spec, target), args.context, args.steps)
        rows[spec]["first_run_s"] = time.perf_counter() - started
    base = rows.get("target", {}).get("step_ms")
    report = {
        "machine": machine_info(),
        "config": vars(args) | {"out": str(args.out), "markdown": str(args.markdown)},
    }
    report["rows"] = rows
    args.out.write_text(json.dumps(report, indent=1))
    machine = report["machine"]
    lines = [
        "# One-token engine step: where the time goes",
        "",
        f"Produced by `python benchmarks/profile_step.py --models {args.models} --steps {args.steps}` "
        f"on {machine['date']} "
        f"({machine['cpu']}, {machine['cores']} cores, torch {machine['torch']}, transformers "
        f"{machine['transformers']}); one-token `Engine.extend` after {args.context} tokens, median of "
        f"{args.steps}; operator self times from torch.profiler over {args.steps} more steps (the "
        "profiler's own cost inflates them a little). linear: the matrix kernels; rest: every other "
        "operator and the Python between them. first run: set-up, compile (with inductor's on-disk cache "
        "as this machine had it) and the measured steps.",
        "",
        "| model | step (ms) | c vs target | profiled | linear | rest (ms) | ops/step | first run (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, r in rows.items():
        c = f"{r['step_ms'] / base:.3f}" if base else "–"
        lines.append(
            f"| {spec} | {r['step_ms']:.2f} | {c} | {r['profiled_ms']:.2f} | {r['linear_ms']:.2f} | "
            f"{r['profiled_ms'] - r['linear_ms']:.2f} | {r['ops_per_step']:.0f} | {r['first_run_s']:.1f} |"
        )
    for spec, r in rows.items():
        lines += [
            "",
            f"## {spec}: top operators by self time",
            "",
            "| op | self ms/step | calls/step |",
            "|---|---:|---:|",
        ]
        lines += [f"| `{o['op']}` | {o['self_ms']:.3f} | {o['calls']:.0f} |" for o in r["top_ops"]]
    args.markdown.write_text("\n".join(lines) + "\n")
    print(args.markdown.read_text())


if __name__ == "__main__":
    main()
