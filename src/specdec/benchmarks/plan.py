"""Which methods a ``specdec bench spec`` run times, and in what order.

HF baselines where HF has the same drafter, our plain decoding and speculative sampling per drafter, engine,
verify rule and γ policy; a rotation so no method always runs first. Kept apart from the run itself so the
plan can be tested without a model.
"""

from __future__ import annotations

import argparse

from specdec.benchmarks.runner import BenchMethod
from specdec.drafters import ModelDrafter, PromptLookupDrafter
from specdec.errors import InvalidArgumentError
from specdec.inputs import positive_int


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
    fixed_gammas: tuple[int, ...] = (),
    fast_drafters: tuple[str, ...] | None = None,
) -> list[BenchMethod]:
    """Every method of the run. A drafter with its own block-length router (``tandem+router:``) runs at
    a fixed γ_max that the router cuts short; every other drafter under the adaptive γ policy, and at
    each of ``fixed_gammas``. Our methods run once per engine (the fast one: only ``fast_drafters``
    where given, since each costs compiles and a full pass over the prompts); the eager engine's rows
    keep their plain names."""
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
            if engine == "fast" and fast_drafters is not None and spec not in fast_drafters:
                continue
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
            for gamma in () if routed else fixed_gammas:
                methods.append(
                    BenchMethod(f"ours-sps[{spec}, γ={gamma}{tag}]", "sps", spec, str(gamma), engine=engine)
                )
    return methods


def fixed_gammas(text: str) -> tuple[int, ...]:
    """``--fixed-gamma``'s list (argparse's type: a typo is a usage error before any model loads), each value
    read as every other count option reads its one (``positive_int``)."""
    try:
        return tuple(positive_int(v) for v in text.split(",") if v.strip())
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"takes γ values >= 1, comma-separated; got {text!r}") from None


def rotated(methods: list[BenchMethod], turn: int) -> list[BenchMethod]:
    """Every method, starting at a different one each prompt, so none always runs first or last."""
    k = turn % len(methods)
    return methods[k:] + methods[:k]


def fast_only(args: argparse.Namespace, drafters: dict) -> tuple[str, ...] | None:
    """``--fast-drafters``, checked against the run's engines and drafters (None: every drafter)."""
    if args.fast_drafters is None:
        return None
    chosen = tuple(spec for spec in args.fast_drafters.split(",") if spec)
    if "fast" not in args.engine.split(","):
        raise InvalidArgumentError("--fast-drafters needs --engine with fast in it (e.g. eager,fast)")
    unknown = [spec for spec in chosen if spec not in drafters]
    if unknown:
        raise InvalidArgumentError(f"--fast-drafters names drafters not in --drafters: {', '.join(unknown)}")
    return chosen
