"""Plain autoregressive decoding: the baseline every speculative decoder must reproduce."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from specdec.decoders.common import DecodeResult, capacity_for, context_full, finish, next_tokens
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import Rows, StopCriteria, StreamCallback
from specdec.engine import Engine
from specdec.sampling import SamplingConfig


def autoregressive_generate(
    target: Engine,
    prompts: Sequence[Sequence[int]],
    *,
    sampling: SamplingConfig,
    stop: StopCriteria,
    generator: torch.Generator | None = None,
    callback: StreamCallback | None = None,
) -> DecodeResult:
    start = time.perf_counter()
    stats, rows = GenerationStats(), Rows(len(prompts), stop, callback)
    target.reset(len(prompts), capacity_for(prompts, stop.max_new_tokens, block=1))
    with stats.timed("prefill_time", target.device):
        if any(len(p) > 1 for p in prompts):
            target.prefill([p[:-1] for p in prompts])
    # Invariant: the cache holds every token but the pending one, which the next call feeds.
    pending = torch.tensor([p[-1] for p in prompts], dtype=torch.long)
    while rows.active:
        done = context_full(target, rows, block=1)
        if done:
            rows.finish(done, "context")
        else:
            with stats.timed("target_time", target.device):
                logits = target.extend(pending[:, None]).logits[:, -1]
            stats.target_calls += 1
            stats.row_steps += len(rows.active)
            pending = next_tokens(logits, sampling, generator).cpu()
            done = rows.emit([[t] for t in pending.tolist()], [0] * len(rows.active))
        if done:
            keep = rows.drop(done)
            if keep is None:
                break
            target.select_rows(keep)
            pending = pending[keep]
    stats.total_time = time.perf_counter() - start
    return finish(rows, stats)
