"""Standalone Tandem generation (§3, Fig. 2): the secondary writes blocks of γ tokens, the primary only
refreshes the representations it reads. Not verified, so not lossless: quality sits between the
secondary's and the primary's (paper Table 3).

Two configurations, as in the paper: with ``free_token`` the primary's pass over a block also emits
the token after it (its own choice, at no extra cost), so each step yields γ secondary tokens and one
primary token; without it the primary only provides representations and every token is the
secondary's. Both run on the shared draft-then-verify loop with a rule that verifies nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from specdec.decoders.common import Request
from specdec.decoders.gamma import FixedGamma
from specdec.decoders.loop import DraftVerifyLoop
from specdec.decoders.method import DecodingMethod
from specdec.decoders.policy import check_gamma
from specdec.decoders.speculative import target_choices
from specdec.drafters import Draft, Drafter
from specdec.engine import Engine
from specdec.sampling import Draws, Sampling, Verification


def keep_block(
    draft: Draft, logits: torch.Tensor, sampling: Sampling, draws: Draws, free_token: bool
) -> Verification:
    """Keep every drafted token. The token after them is the primary's own choice (``free_token``), or
    the last drafted token itself, so that the block is all the secondary's. A row with nothing drafted
    (only near the end of the context window) takes the primary's token either way."""
    lengths = draft.row_lengths()
    primary = target_choices(logits, sampling, draws)
    need_primary = lengths >= 0 if free_token else lengths == 0
    nxt = torch.zeros(len(lengths), dtype=torch.long)
    for position in lengths[need_primary].unique().tolist():
        rows = (need_primary & (lengths == position)).nonzero().flatten()
        nxt[rows] = primary(position, rows)
    if free_token:
        return Verification(lengths, nxt)
    drafted = lengths > 0
    rows = drafted.nonzero().flatten()
    nxt[rows] = draft.tokens[rows, lengths[rows] - 1]
    return Verification((lengths - 1).clamp(min=0), nxt)


@dataclass(frozen=True)
class TandemGeneration(DecodingMethod):
    """Standalone Tandem with block length γ (any γ; the paper trains with 2 and generates with 3)."""

    gamma: int = 3
    free_token: bool = True
    name: ClassVar[str] = "tandem"
    lossless: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_gamma(self.gamma)

    def loop(self, target: Engine, drafter: Drafter | None, request: Request) -> DraftVerifyLoop:
        def rule(draft: Draft, logits: torch.Tensor, sampling: Sampling, draws: Draws) -> Verification:
            return keep_block(draft, logits, sampling, draws, self.free_token)

        return DraftVerifyLoop(target, drafter, request, rule, policy=FixedGamma(self.gamma))
