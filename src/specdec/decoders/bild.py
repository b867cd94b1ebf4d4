"""Big Little Decoder (Kim et al. 2023): the small model writes, the large model corrects.

The small model (any drafter) runs autoregressively until its confidence max_y p(y) falls below
α_FB (**fallback**) or it has written ``max_small_tokens`` in a row; the large model then scores all
pending tokens in one call. **Rollback**: at the first pending position whose distance
d = −log q(y_small) exceeds α_RB, the large model's own token replaces the small one and everything
after it is discarded; otherwise the large model's token after the last pending one is appended.
Unlike speculative sampling this keeps tokens the target would merely find plausible, so it is
*not* lossless: α_RB trades quality for speed.

One deviation from the paper: a small token equal to the large model's own choice at that position
(its argmax when greedy; its draw with the position's noise when sampling, the draw plain decoding
makes) is never rolled back. The paper's rule would replace it by itself, or by a fresh draw, and
discard what follows. It makes α_RB = 0 mean "reject every disagreement", under which BiLD
reproduces the large model's own decoding, greedy or sampled with the same seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from specdec.decoders.common import Request
from specdec.decoders.gamma import FixedGamma
from specdec.decoders.loop import DraftVerifyLoop
from specdec.decoders.method import DecodingMethod
from specdec.decoders.speculative import target_choices
from specdec.drafters import Draft, Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.sampling import Draws, Sampling, Verification, match_verify


@dataclass(frozen=True)
class BiLD(DecodingMethod):
    """BiLD's two thresholds and the cap on consecutive small-model tokens.

    Both thresholds read the models' own distributions at temperature 1 without truncation, so a
    setting means the same under greedy and nucleus sampling.
    """

    fallback_threshold: float = 0.5  # α_FB: hand over when max_y p(y) < α_FB; 0 never falls back
    rollback_threshold: float = 3.0  # α_RB: replace a small token when −log q(y) > α_RB; inf never does
    max_small_tokens: int = 10
    name: ClassVar[str] = "bild"
    lossless: ClassVar[bool] = False

    def __post_init__(self) -> None:
        fb, rb, cap = self.fallback_threshold, self.rollback_threshold, self.max_small_tokens
        if isinstance(fb, bool) or not isinstance(fb, int | float) or not 0 <= fb <= 1:
            raise InvalidArgumentError(f"fallback_threshold α_FB must be a probability in [0, 1], got {fb!r}")
        if isinstance(rb, bool) or not isinstance(rb, int | float) or math.isnan(rb) or rb < 0:
            raise InvalidArgumentError(
                f"rollback_threshold α_RB must be a distance >= 0 (inf disables rollback), got {rb!r}"
            )
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise InvalidArgumentError(f"max_small_tokens must be an integer >= 1, got {cap!r}")

    def loop(self, target: Engine, drafter: Drafter | None, request: Request) -> DraftVerifyLoop:
        if drafter is not None and drafter.proposes_trees:
            raise InvalidArgumentError(
                f"BiLD verifies a chain of small-model tokens; drafter {getattr(drafter, 'name', drafter)!r} "
                "proposes trees (use method 'sps')"
            )

        def rule(draft: Draft, logits: torch.Tensor, sampling: Sampling, draws: Draws) -> Verification:
            return bild_verify(draft, logits, loop.row_thresholds(1), sampling, draws)  # this step's rows'

        loop = DraftVerifyLoop(
            target,
            drafter,
            request,
            rule,
            policy=FixedGamma(self.max_small_tokens),
            thresholds=(self.fallback_threshold, self.rollback_threshold),
        )
        return loop


def rollback_distance(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    """d = −log q(y): the cross-entropy of each small-model token under the large model, float64."""
    log_q = torch.log_softmax(target_logits.to(torch.float64), dim=-1)
    return -log_q.gather(-1, draft_tokens[..., None].to(log_q.device)).squeeze(-1)


def bild_verify(
    draft: Draft,
    logits: torch.Tensor,
    rollback_threshold: float | torch.Tensor,
    sampling: Sampling,
    draws: Draws,
) -> Verification:
    """Keep pending small tokens up to the first one with d > α_RB (one for all rows, or ``[B]``) that the
    large model would not have chosen itself; the large model's own choice replaces it, or follows the
    last kept token."""
    distance = rollback_distance(draft.tokens, logits[:, : draft.gamma]).cpu()
    per_row = torch.is_tensor(rollback_threshold)

    def within_threshold(i: int, rows: torch.Tensor, choice: torch.Tensor) -> torch.Tensor:
        return distance[rows, i] <= (rollback_threshold[rows] if per_row else rollback_threshold)

    return match_verify(
        draft.tokens, target_choices(logits, sampling, draws), draft.row_lengths(), within_threshold
    )
