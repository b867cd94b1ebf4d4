"""Packed (oneDNN) against unpacked (MKL) fp32 linears for the target's one-token step, on this machine.

Why: on the twenty-ninth session's Intel Xeon our plain decoding ran 0.87x HF `generate` (RESULTS.md
at e91584f), where the AMD EPYC ran 1.8x; the step's linears took 32.6 ms of 48.7
(PROFILE_STEP_2026-11-27f_XEON.md). This times `Engine.extend` of one token, median of STEPS, with and
without packing, alternating rounds (a 256-token context; each step rolled back, as profile_step.py does).

    python benchmarks/campaigns/pack-probe-2026-11-27f.py --out benchmarks/results/pack_probe_2026-11-27f.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from specdec.benchmarks.report import machine_info
from specdec.engine import Engine
from specdec.models import load_model


@torch.inference_mode()
def step_times(engine: Engine, steps: int, context: int = 256) -> list[float]:
    generator = torch.Generator().manual_seed(0)
    engine.reset(1, context + steps + 8)
    engine.extend(torch.randint(3, 1000, (1, context), generator=generator))
    token = torch.tensor([[42]])
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        engine.extend(token)
        times.append(time.perf_counter() - start)
        engine.rollback(1)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    target = load_model("smollm2-135m")
    engines = {
        "packed": Engine(target.model, pack_weights=True),
        "unpacked": Engine(target.model, pack_weights=False),
    }
    medians: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for name, engine in engines.items():
            medians[name].append(1000 * statistics.median(step_times(engine, args.steps)))
    record = {"what": __doc__.splitlines()[0], "median_step_ms_per_round": medians, "machine": machine_info()}
    args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(medians))


if __name__ == "__main__":
    main()
