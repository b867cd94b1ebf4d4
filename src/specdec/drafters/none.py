"""The drafter of plain decoding: it guesses nothing, so every step is one target call for one token.

Plain decoding runs on the same loop as every speculative method (one loop to test, admit into and
step), with this drafter and no γ policy.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.engine import ExtendOutput
from specdec.sampling import Draws, Sampling


class NoDrafter(Drafter):
    """Proposes empty drafts; keeps only the number of rows."""

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.rows = len(prompts)

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.rows += len(prompts)

    def propose(
        self, gamma: int, sampling: Sampling, draws: Draws, *, min_confidence: float | torch.Tensor = 0.0
    ) -> Draft:
        return Draft.empty(self.rows)

    def update(self, feedback: Feedback) -> None:
        pass

    def select_rows(self, rows: torch.Tensor) -> None:
        self.rows = len(rows)
