"""One SmolLM2 engine's one-token step, the median of each of N windows of 40 steps after a 256-token prompt,
to see how it moves within one engine and between processes (run it under OMP_WAIT_POLICY=ACTIVE, or
THP_MEM_ALLOC_ENABLE=1, to compare). Session 2026-11-30 (fifty-first), issue 20: the compiled one-token step
took 13.0, 16.3 and 13.5 ms in three processes of bita-block-probe-2026-11-30.py.

    python benchmarks/campaigns/step-windows-probe-2026-11-30.py N compiled|eager [CAPACITY] [RECOMPILES]

RECOMPILES > 1 compiles the engine that many times in the process (dynamo reset between).
"""

import os
import statistics
import sys

import torch

from specdec.benchmarks.step_timing import timed_steps
from specdec.engine import Engine
from specdec.models import load_model


def step_ms(engine: Engine, token: torch.Tensor, rounds: int) -> float:
    """The median milliseconds of ``rounds`` one-token steps, each rolled back."""
    return statistics.median(timed_steps(engine, token, rounds)) * 1e3


def main(windows: int, kind: str, capacity: int, builds: int) -> None:
    model = load_model("smollm2-135m").model.eval()
    prompt = torch.randint(3, 40_000, (1, 256), generator=torch.Generator().manual_seed(0))
    for build in range(builds):
        torch._dynamo.reset()
        engine = Engine(model, compile=kind == "compiled")
        engine.reset(1, capacity)
        with torch.inference_mode():
            engine.prefill([prompt[0].tolist()])
            step_ms(engine, prompt[:, :1], 5)
            medians = [step_ms(engine, prompt[:, :1], 40) for _ in range(windows)]
        policy = os.environ.get("OMP_WAIT_POLICY", "-")
        line = " ".join(f"{m:.1f}" for m in medians)
        print(f"{kind} build {build} capacity {capacity} OMP_WAIT_POLICY={policy}: {line}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]), args[1], int(args[2]) if len(args) > 2 else 512, int(args[3]) if len(args) > 3 else 1)
