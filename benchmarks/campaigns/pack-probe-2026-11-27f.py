"""Packed (oneDNN) against unpacked (MKL) fp32 linears for the target's one-token step, on this machine.

Why: on the twenty-ninth session's Intel Xeon our plain decoding ran 0.87x HF `generate` (RESULTS.md
at e91584f), where the AMD EPYC ran 1.8x; the step's linears took 32.6 ms of 48.7
(PROFILE_STEP_2026-11-27f_XEON.md). This times `Engine.extend` of one token, median of STEPS, with and
without packing, alternating rounds (a 256-token context; each step rolled back:
`specdec.benchmarks.step_timing`, which profile_step.py times with too).

    python benchmarks/campaigns/pack-probe-2026-11-27f.py --out benchmarks/results/pack_probe_2026-11-27f.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from specdec.benchmarks.report import machine_info
from specdec.benchmarks.step_timing import primed_token, timed_steps
from specdec.engine import Engine
from specdec.models import load_model


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
            token = primed_token(engine, context=256, room=8)
            medians[name].append(1000 * statistics.median(timed_steps(engine, token, args.steps)))
    record = {"what": __doc__.splitlines()[0], "median_step_ms_per_round": medians, "machine": machine_info()}
    args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(medians))


if __name__ == "__main__":
    main()
