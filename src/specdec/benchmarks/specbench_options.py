"""``specdec bench spec``'s options, in the groups ``--help`` lists them by: the workload (target, prompts,
lengths), the methods (drafters, engines, γ), sampling, and where the results go."""

from __future__ import annotations

import argparse
from pathlib import Path

from specdec.benchmarks.outputs import add_output_arguments
from specdec.benchmarks.plan import fixed_gammas
from specdec.inputs import positive_int


def workload_arguments(parser: argparse.ArgumentParser) -> None:
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


def methods_arguments(parser: argparse.ArgumentParser) -> None:
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


def sampling_arguments(parser: argparse.ArgumentParser) -> None:
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


def output_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the results go; runs never overwrite another run's files (:mod:`specdec.benchmarks.outputs`)."""
    group = parser.add_argument_group("output")
    add_output_arguments(group, "specbench", from_json=True)
    group.add_argument(
        "--eval-report",
        type=Path,
        action="append",
        default=[],
        help="specdec eval draft JSON to tabulate too",
    )
