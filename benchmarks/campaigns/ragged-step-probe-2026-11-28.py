"""Session 2026-11-28 (thirty-fifth), CAMPAIGN next run 5 (the c = 64 gap), after the fix: a batch's plain
step with ragged plans (engine/ragged.py: every row attended over the short rows' range, the long rows again
over theirs) against the single attention call over the longest row's range, in one run. The cases of
`pad-step-probe-2026-11-28.py` (16 and 64 rows: every row 300 tokens; one row of 1,500; every row 1,500),
each timed both ways in alternation (plans off: `plan_for` returning None), one-token steps rolled back,
the median of 6 after 2 warm-ups, three rounds. Run with the machine to itself:
    python benchmarks/campaigns/ragged-step-probe-2026-11-28.py
"""

import statistics

import torch

from specdec.benchmarks.step_timing import timed_steps
from specdec.engine import Engine, attention
from specdec.models import load_model

target = load_model("smollm2-135m")
generator = torch.Generator().manual_seed(0)
planned = attention.plan_for


def step_ms(engine: Engine, token: torch.Tensor) -> float:
    """Median ms of 6 rolled-back one-token steps after 2 warm-ups."""
    return 1000 * statistics.median(timed_steps(engine, token, 8)[2:])


for rows in (16, 64):
    for label, lengths in (
        ("all 300", [300] * rows),
        ("one 1500", [1500] + [300] * (rows - 1)),
        ("all 1500", [1500] * rows),
    ):
        engine = Engine(target.model)
        prompts = [torch.randint(3, 49000, (n,), generator=generator).tolist() for n in lengths]
        token = torch.randint(3, 49000, (rows, 1), generator=generator)
        result = {"single call": [], "ragged": []}
        with torch.inference_mode():
            engine.start(prompts, extra_slots=64)
            for _ in range(3):
                for way in result:
                    attention.plan_for = planned if way == "ragged" else (lambda mask: None)
                    result[way].append(step_ms(engine, token))
        attention.plan_for = planned
        single, ragged = (statistics.median(v) for v in result.values())
        print(
            rows,
            label,
            f"single call {single / rows:.2f} ms/row",
            f"ragged {ragged / rows:.2f} ms/row",
            f"({single / ragged:.2f}x)",
            result,
            flush=True,
        )
