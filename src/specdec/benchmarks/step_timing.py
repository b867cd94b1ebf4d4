"""One engine step timed alone: the measure that profiles and probes compare engines and kernels with.

A one-token step's cost grows with the context it attends over, so every timed step is rolled back:
each one sees the same context, and the median of a few dozen is a figure two engines (packed against
unpacked linears, eager against compiled) can be set side by side in one run.
"""

from __future__ import annotations

import statistics
import time

import torch

from specdec.engine import Engine


@torch.inference_mode()
def primed_token(engine: Engine, context: int, room: int, seed: int = 0) -> torch.Tensor:
    """Reset ``engine`` to one row holding a random ``context``-token prompt (with ``room`` slots to
    spare) and return a random ``[1, 1]`` next token to time steps with."""
    vocab = engine.model.get_input_embeddings().weight.shape[0]
    generator = torch.Generator().manual_seed(seed)
    engine.reset(1, context + room)
    engine.extend(torch.randint(3, vocab, (1, context), generator=generator))
    return torch.randint(3, vocab, (1, 1), generator=generator)


@torch.inference_mode()
def timed_steps(engine: Engine, token: torch.Tensor, steps: int, **options) -> list[float]:
    """Wall seconds of ``steps`` ``extend`` calls of ``token`` (``[1, 1]``, or ``[1, n]`` to time a
    verify-sized block, with its ``extend`` options: tree mask, given embeddings...), each rolled back,
    so the engine's context is the same before and after."""
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        engine.extend(token, **options)
        times.append(time.perf_counter() - start)
        engine.rollback(token.shape[1])
    return times


def interleaved_medians(engine: Engine, blocks: dict[str, tuple[torch.Tensor, dict]], rounds: int) -> dict:
    """Median wall seconds of each named block (tokens and their ``extend`` options), timed one call
    each in turn for ``rounds`` rounds, after one untimed call each (which compiles any graph not
    built yet): interleaved, so a machine's drift hits every block alike."""
    for tokens, options in blocks.values():
        timed_steps(engine, tokens, 1, **options)
    times: dict[str, list[float]] = {name: [] for name in blocks}
    for _ in range(rounds):
        for name, (tokens, options) in blocks.items():
            times[name] += timed_steps(engine, tokens, 1, **options)
    return {name: statistics.median(spent) for name, spent in times.items()}
