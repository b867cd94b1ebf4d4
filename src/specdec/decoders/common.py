"""Pieces every decoding loop shares: the request, the result, the method interface, budgets, and the
target's own choice of token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import Rows, StopCriteria, StreamCallback
from specdec.engine import Engine
from specdec.sampling import Draws, RowSampling, Sampling, greedy_tokens, sampling_distribution

# Slots a decoder's cache reserves beyond the prompt at first (it grows with the text, up to the
# context window), so short answers to requests with a large max_new_tokens stay small.
FIRST_GROWTH = 256


@dataclass(frozen=True)
class Request:
    """One batch to decode: token ids per row, how to sample, when to stop, each row's noise key."""

    prompts: Sequence[Sequence[int]]
    sampling: Sampling  # one config for every row, or a RowSampling of one per row
    stop: StopCriteria
    keys: Sequence[int]  # one per row, see specdec.sampling.noise.row_keys
    callback: StreamCallback | None = None
    draft_cap: int | None = None  # the most draft tokens a row verifies per step (0: none)
    route: str | None = None  # which of a RoutedDrafter's drafters drafts for these rows (None: its default)
    thresholds: tuple[float, float] | None = None  # BiLD's (α_FB, α_RB) for these rows (None: the method's)

    def rows(self) -> Rows:
        return Rows(
            self.prompts, self.stop, self.keys, self.callback, self.sampling, self.draft_cap, self.thresholds
        )

    def first_growth(self, block: int) -> int:
        """Slots to reserve beyond the longest prompt: some new tokens and one block of slack."""
        return min(self.stop.max_new_tokens, FIRST_GROWTH) + block + 1


@dataclass
class DecodeResult:
    tokens: list[list[int]]  # new tokens per prompt row
    finish_reasons: list[str]  # "eos", "length", "stop_string" or "context"
    from_draft: list[list[bool]]  # per token: was it an accepted draft token
    stats: GenerationStats


def target_choice(
    logits: torch.Tensor,
    sampling: Sampling,
    draws: Draws,
    offset: int,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """The target's own token from ``logits`` ``[n, V]`` for batch positions ``rows`` (default: every
    row): the argmax when greedy, else the Gumbel-max draw with the noise of position ``offset``
    (stream DRAW), exactly what plain decoding draws there. ``sampling`` is the batch's."""
    if isinstance(sampling, RowSampling) and rows is not None:
        sampling = sampling.select(rows)
    if sampling.greedy:
        return greedy_tokens(logits).cpu()
    return draws.sample(sampling_distribution(logits, sampling), offset, rows).cpu()


def context_full(engine: Engine) -> list[int]:
    """Batch positions whose pending token has no position left in the context window."""
    room = engine.room()
    return [] if room is None else (room <= 0).nonzero().flatten().tolist()


def finish(rows: Rows, stats: GenerationStats) -> DecodeResult:
    stats.new_tokens = sum(len(t) for t in rows.tokens)
    return DecodeResult(
        tokens=rows.tokens,
        finish_reasons=[r or "length" for r in rows.finish_reasons],
        from_draft=rows.from_draft,
        stats=stats,
    )
