"""What every drafter running a small model on its own cache shares: the draft loop, the drafting copy of
the model, and the bookkeeping of what its cache holds after each verify.

A draft model (:mod:`specdec.drafters.model`) and a Tandem secondary (:mod:`specdec.drafters.tandem`)
differ only in how they catch up with what the target settled (a draft model runs the settled tokens
itself; a secondary writes the primary's states of them) and in what stops a draft early (a Tandem
router); :class:`SmallModelDrafter` is the rest.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

from specdec.drafters.base import Draft, Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.models.draft_vocab import trim_output_head
from specdec.models.surgery import reduced_precision_copy
from specdec.sampling import (
    Draws,
    Entries,
    Sampling,
    greedy_tokens,
    max_probability,
    sampling_distribution,
)

# Slots a draft engine reserves beyond the prompt at first; it grows as the text does.
FIRST_GROWTH = 128


@dataclass
class DraftRun:
    draft: Draft
    fed_all: bool  # the last draft token also went through the model (drafting stopped on fallback)
    forwards: int  # model calls made, counting the one that produced ``first_logits``
    logits: list[torch.Tensor]  # the draft model's logits [B, V] at each drafted position


def draft_autoregressively(
    first_logits: torch.Tensor,
    step: Callable[[torch.Tensor], torch.Tensor],
    gamma: int,
    sampling: Sampling,
    draws: Draws,
    min_confidence: float | torch.Tensor = 0.0,
    stop: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> DraftRun:
    """Sample up to γ tokens, calling ``step(tokens) -> next logits`` between them.

    The i-th token is drawn with the draws at offset i: the noise the target's own choice at that
    position uses, so a draft that agrees with the target draws the same token.

    With ``min_confidence`` (BiLD's α_FB; float64 ``[B]`` for one per row) a row stops before its first
    token whose max p is below it, and with ``stop`` (``logits [B, V] -> [B] bool``, e.g. Tandem's
    router) before its first token that says True; once every row has stopped the target takes over
    (rows that stopped earlier wait for the batch). The last token is not fed unless drafting stopped
    that way: it is only needed once accepted.
    """
    logits, batch = first_logits, first_logits.shape[0]
    confident = bool((torch.as_tensor(min_confidence) > 0).any())  # one α_FB, or one per row
    lengths = torch.full((batch,), gamma, dtype=torch.long)
    drafting = torch.ones(batch, dtype=torch.bool)
    tokens, probs, seen, forwards = [], [], [], 1
    for i in range(gamma):
        if confident or stop is not None:
            unsure = torch.zeros(batch, dtype=torch.bool)
            if confident:
                unsure |= max_probability(logits).cpu() < min_confidence
            if stop is not None:
                unsure |= stop(logits).cpu()
            unsure &= drafting
            lengths[unsure] = i
            drafting &= ~unsure
            if not drafting.any():
                break
        if sampling.greedy:
            token = greedy_tokens(logits)
        else:
            p = sampling_distribution(logits, sampling)
            token = draws.sample(p, i)
            probs.append(p.dense() if isinstance(p, Entries) else p)
        tokens.append(token)
        seen.append(logits)
        if i < gamma - 1:
            logits = step(token)
            forwards += 1
    draft = Draft(
        tokens=torch.stack(tokens, dim=1).cpu() if tokens else torch.zeros(batch, 0, dtype=torch.long),
        probs=torch.stack(probs, dim=1) if probs else None,
        lengths=lengths if confident or stop is not None else None,
    )
    return DraftRun(draft, fed_all=len(tokens) < gamma, forwards=forwards, logits=seen)


def drafting_copy(model: PreTrainedModel, vocab: torch.Tensor | None, int8: bool) -> PreTrainedModel:
    """What a small model drafts with: its output head cut to ``vocab`` (p = 0 elsewhere) and its
    linears dynamically quantised to int8 where asked; ``model`` itself when neither is (it stays
    untouched either way). A cheaper step changes how often drafts are accepted, never the output."""
    drafting = model if vocab is None else trim_output_head(model, vocab)
    if int8:
        if next(model.parameters()).device.type != "cpu":
            raise InvalidArgumentError(
                "int8 drafts run on CPU only (dynamic int8 linears); use bf16: on a GPU"
            )
        drafting = reduced_precision_copy(drafting, "int8")
    return drafting


class SmallModelDrafter(Drafter):
    """A drafter whose small model runs on its own engine: each step it catches up with what the target
    settled (:meth:`catch_up`, returning the logits after the pending token), drafts autoregressively,
    and remembers which draft tokens it fed, so :meth:`update` knows what to roll back.

    ``_last`` holds the last draft's tokens ``[B, γ]``; ``_fed`` how many of them the model ran (the
    last one only when drafting stopped early), or None when it ran nothing (γ = 0).
    """

    has_confidence = True

    def __init__(self, drafting: PreTrainedModel, *, pack_weights: bool | None, name: str):
        self.engine = Engine(drafting, pack_weights=pack_weights)
        self.name = name

    @property
    def context_size(self) -> int | None:
        return self.engine.max_positions

    @abstractmethod
    def catch_up(self) -> torch.Tensor:
        """Bring the cache up to the pending token (included); its logits ``[B, V]``."""

    def stop_rule(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """``logits [B, V] -> [B] bool``: rows that stop before this token (None: none do)."""
        return None

    def proposal(self, run: DraftRun) -> Draft:
        """The draft the decoder verifies (the chain itself, or a tree grown from it)."""
        return run.draft

    @torch.inference_mode()
    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        if gamma == 0:
            empty = Draft.empty(self.engine.batch_size)
            self._last, self._fed = empty.tokens, None
            return empty
        run = draft_autoregressively(
            self.catch_up(),
            lambda token: self.engine.extend(token[:, None]).logits[:, -1],
            gamma,
            sampling,
            draws,
            min_confidence,
            stop=self.stop_rule(),
        )
        self.draft_calls += run.forwards
        self._last = run.draft.tokens
        # The model ran every draft token but the last, unless drafting stopped early.
        self._fed = run.draft.gamma if run.fed_all else run.draft.gamma - 1
        return self.proposal(run)

    def select_rows(self, rows: torch.Tensor) -> None:
        self.engine.select_rows(rows)
        self._last = self._last[rows]

    def _admit_rows(self, count: int) -> None:
        """Newcomers' rows in the last draft's bookkeeping (they drafted nothing)."""
        self._last = torch.cat([self._last, self._last.new_zeros(count, self._last.shape[1])])
