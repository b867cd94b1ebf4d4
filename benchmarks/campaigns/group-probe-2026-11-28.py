"""Shared-input linears packed as one (q/k/v, gate/up) against one packed kernel per linear, and MKL.

Why: on the Cascade Lake Xeon our plain decoding ran 0.78x HF `generate` (HF_HEADLINE_2026-11-28_1548.md);
each oneDNN `_linear_pointwise` call costs ~50 us outside its kernel (16x16 weight: 60 us a call against
MKL's 9), and a SmolLM2 step made 211 of them. This times `Engine.extend` of one token and of a
6-token block (each rolled back, 256-token context) for three engines in one process, the engines
taking turns step by step (this VM's step time drifts 40 % within a minute), median of each round's
STEPS steps: "grouped" (the engine as it is), "per-linear" (the packing before
grouping: `pack_linear_layers` without its example forward) and "unpacked" (MKL, not batch-invariant).

    python benchmarks/campaigns/group-probe-2026-11-28.py --out benchmarks/results/group_probe_2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from unittest import mock

import torch

from specdec.benchmarks.report import machine_info
from specdec.benchmarks.step_timing import primed_token, timed_steps
from specdec.engine import Engine
from specdec.engine.kernels import SharedInputMember
from specdec.models import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-mkl", action="store_true", help="leave out the unpacked engine")
    args = parser.parse_args()
    target = load_model("smollm2-135m")
    with mock.patch("specdec.engine.engine.two_token_forward", None):
        per_linear = Engine(target.model, pack_weights=True)
    engines = {
        "grouped": Engine(target.model, pack_weights=True),
        "per-linear": per_linear,
        **({} if args.no_mkl else {"unpacked": Engine(target.model, pack_weights=False)}),
    }
    groups = {
        name: len({m.group for m in e.model.modules() if isinstance(m, SharedInputMember)})
        for name, e in engines.items()
    }
    medians: dict[str, dict[int, list[float]]] = {name: {1: [], 6: []} for name in engines}
    tokens = {name: primed_token(engine, context=256, room=8) for name, engine in engines.items()}
    for _ in range(args.rounds):
        for width in (1, 6):
            times: dict[str, list[float]] = {name: [] for name in engines}
            for _ in range(args.steps):
                for name, engine in engines.items():
                    times[name] += timed_steps(engine, tokens[name].expand(1, width), 1)
            for name, seconds in times.items():
                medians[name][width].append(1000 * statistics.median(seconds))
    summary = {
        name: {f"T({w}) ms": round(statistics.median(v), 2) for w, v in by_width.items()}
        for name, by_width in medians.items()
    }
    record = {
        "what": __doc__.splitlines()[0],
        "groups": groups,
        "median_step_ms_per_round": medians,
        "median_of_rounds": summary,
        "torch_threads": torch.get_num_threads(),
        "machine": machine_info(),
    }
    args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
