"""Pieces every decoding loop shares: the result type, budgets, and the next-token rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import Rows
from specdec.engine import Engine
from specdec.sampling import SamplingConfig, greedy_tokens, logits_to_probs, sample


@dataclass
class DecodeResult:
    tokens: list[list[int]]  # new tokens per prompt row
    finish_reasons: list[str]  # "eos", "length", "stop_string" or "context"
    from_draft: list[list[bool]]  # per token: was it an accepted draft token
    stats: GenerationStats


def capacity_for(prompts: Sequence[Sequence[int]], max_new_tokens: int, block: int) -> int:
    """Slots a row can need: its prompt, its new tokens and one speculative block of slack."""
    return max(len(p) for p in prompts) + max_new_tokens + block + 1


def next_tokens(
    logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None
) -> torch.Tensor:
    """The target's own choice from its logits: argmax when greedy, else a draw from q."""
    if sampling.greedy:
        return greedy_tokens(logits)
    return sample(logits_to_probs(logits, sampling), generator)


def context_full(engine: Engine, rows: Rows, block: int) -> list[int]:
    """Batch positions whose next block would run past the model's context window."""
    if engine.max_positions is None:
        return []
    return [pos for pos, n in enumerate(engine.num_tokens.tolist()) if n + block > engine.max_positions]


def finish(rows: Rows, stats: GenerationStats) -> DecodeResult:
    stats.new_tokens = sum(len(t) for t in rows.tokens)
    return DecodeResult(
        tokens=rows.tokens,
        finish_reasons=[r or "length" for r in rows.finish_reasons],
        from_draft=rows.from_draft,
        stats=stats,
    )
