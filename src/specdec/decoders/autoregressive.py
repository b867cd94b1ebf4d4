"""Plain autoregressive decoding: the baseline every lossless speculative decoder must reproduce."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from specdec.decoders.common import DecodeResult, DecodingMethod, Request, context_full, finish, target_choice
from specdec.decoders.stats import GenerationStats
from specdec.drafters import Drafter
from specdec.engine import Engine


def autoregressive_generate(target: Engine, request: Request) -> DecodeResult:
    start = time.perf_counter()
    stats, rows = GenerationStats(), request.rows()
    with stats.timed("prefill_time", target.device):
        target.start(request.prompts, extra_slots=request.first_growth(block=1))
    while rows.active:
        done = context_full(target)
        if done:
            rows.finish(done, "context")
        else:
            with stats.timed("target_time", target.device):
                logits = target.extend(rows.pending[:, None]).logits[:, -1]
            stats.target_calls += 1
            stats.row_steps += len(rows.active)
            tokens = target_choice(logits, request.sampling, rows.draws(), offset=0)
            done = rows.emit([[t] for t in tokens.tolist()], [0] * len(rows.active))
        if done:
            rows.drop(done, target)
    stats.total_time = time.perf_counter() - start
    return finish(rows, stats)


@dataclass(frozen=True)
class PlainDecoding(DecodingMethod):
    """One target call per token."""

    name: ClassVar[str] = "plain"
    needs_drafter: ClassVar[bool] = False

    def decode(self, target: Engine, drafter: Drafter | None, request: Request) -> DecodeResult:
        return autoregressive_generate(target, request)
