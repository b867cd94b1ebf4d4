"""The drafter strategy interface: one small class per way of guessing the target's next tokens.

Verification lives in the decoders; a drafter only proposes tokens (with the distribution p they
were drawn from) and is told afterwards how many were accepted, so it can roll its own state back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.engine import Engine
from specdec.sampling import SamplingConfig


@dataclass
class Draft:
    tokens: torch.Tensor  # [B, γ] long; positions past a row's length are padding
    probs: torch.Tensor | None = None  # [B, γ, V] p, the distributions tokens were drawn from; None = one-hot
    lengths: torch.Tensor | None = None  # [B] tokens really proposed per row; None = all γ

    @property
    def gamma(self) -> int:
        return self.tokens.shape[1]

    def row_lengths(self) -> torch.Tensor:
        if self.lengths is None:
            return torch.full((self.tokens.shape[0],), self.gamma, dtype=torch.long)
        return self.lengths


class Drafter(ABC):
    """Proposes γ tokens per row; keeps whatever state it needs in step with the target."""

    #: forwards of a draft model since :meth:`begin` (model-free drafters leave it at 0)
    draft_calls: int = 0
    #: whether :meth:`propose` honours ``min_confidence`` (its guesses come with a distribution)
    has_confidence: bool = False

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:  # noqa: B027
        """Raise if this drafter cannot draft for ``target`` (e.g. a different vocabulary)."""

    def attach(self, target: Engine) -> None:  # noqa: B027
        """Receive the target's engine; drafters that run on the target's own cache keep it."""

    @abstractmethod
    def begin(self, prompts: Sequence[Sequence[int]], capacity: int) -> None:
        """Start a batch. Every prompt's last token is still pending (not yet seen by the target)."""

    @abstractmethod
    def propose(
        self,
        gamma: int,
        sampling: SamplingConfig,
        generator: torch.Generator | None,
        *,
        min_confidence: float = 0.0,
    ) -> Draft:
        """Guess up to ``gamma`` tokens following each row's pending token.

        ``min_confidence`` is BiLD's fallback threshold α_FB: a row's draft stops *before* the first
        token whose draft probability max_y p(y) (temperature 1, untruncated) is below it, handing
        that position to the target. Drafters whose guesses carry no confidence ignore it.
        """

    @abstractmethod
    def update(self, num_accepted: torch.Tensor, next_tokens: torch.Tensor) -> None:
        """The target kept ``num_accepted`` draft tokens per row, then produced ``next_tokens``."""

    @abstractmethod
    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only these batch positions (the others finished)."""
