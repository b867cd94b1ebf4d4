"""Big Little Decoder (Kim et al. 2023): the small model writes, the large model corrects.

The small model (any drafter) runs autoregressively until its confidence max_y p(y) falls below
α_FB (**fallback**) or it has written ``max_small_tokens`` in a row; the large model then scores all
pending tokens in one call. **Rollback**: at the first pending position whose distance
d = −log q(y_small) exceeds α_RB, the large model's own token replaces the small one and everything
after it is discarded; otherwise the large model's token after the last pending one is appended.
Unlike speculative sampling this keeps tokens the target would merely find plausible, so it is
*not* lossless: α_RB trades quality for speed.

One deviation from the paper, in greedy mode only: a small token equal to the large model's argmax
is never rolled back (the paper's rule would replace it by itself and discard what follows, which
the small model then regenerates identically). It makes α_RB = 0 mean "reject every disagreement",
under which greedy BiLD equals the large model's greedy decoding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specdec.decoders.common import DecodeResult, next_tokens
from specdec.decoders.gamma import FixedGamma
from specdec.decoders.speculative import draft_verify_loop
from specdec.decoders.stopping import StopCriteria, StreamCallback
from specdec.drafters.base import Draft, Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.sampling import SamplingConfig, Verification, greedy_tokens


@dataclass(frozen=True)
class BildConfig:
    """BiLD's two thresholds and the cap on consecutive small-model tokens.

    Both thresholds read the models' own distributions at temperature 1 without truncation, so a
    setting means the same under greedy and nucleus sampling.
    """

    fallback_threshold: float = 0.5  # α_FB: hand over when max_y p(y) < α_FB; 0 never falls back
    rollback_threshold: float = 3.0  # α_RB: replace a small token when −log q(y) > α_RB; inf never does
    max_small_tokens: int = 10

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


def rollback_distance(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    """d = −log q(y): the cross-entropy of each small-model token under the large model, float64."""
    log_q = torch.log_softmax(target_logits.to(torch.float64), dim=-1)
    return -log_q.gather(-1, draft_tokens[..., None].to(log_q.device)).squeeze(-1)


def first_rollback(offending: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Tokens kept per row: the index of the first offending position, or the row's length."""
    gamma = offending.shape[1]
    positions = torch.arange(gamma)[None, :]
    stop = offending.cpu() | (positions >= lengths[:, None])
    return torch.where(stop.any(dim=1), stop.int().argmax(dim=1), torch.full_like(lengths, gamma))


def bild_verify(
    draft: Draft,
    logits: torch.Tensor,
    config: BildConfig,
    sampling: SamplingConfig,
    generator: torch.Generator | None,
) -> Verification:
    """Keep pending small tokens up to the first one with d > α_RB; the large model supplies the next."""
    lengths = draft.row_lengths()
    if draft.gamma == 0:
        accepted = torch.zeros(logits.shape[0], dtype=torch.long)
    else:
        scored = logits[:, : draft.gamma]
        offending = rollback_distance(draft.tokens, scored).cpu() > config.rollback_threshold
        if sampling.greedy:
            offending &= greedy_tokens(scored).cpu() != draft.tokens
        accepted = first_rollback(offending, lengths)
    rows = torch.arange(logits.shape[0])
    chosen = logits[rows, accepted.to(logits.device)]  # replacement on rollback, else the fallback token
    return Verification(accepted, next_tokens(chosen, sampling, generator).cpu())


def bild_generate(
    target: Engine,
    drafter: Drafter,
    prompts: Sequence[Sequence[int]],
    *,
    config: BildConfig,
    sampling: SamplingConfig,
    stop: StopCriteria,
    generator: torch.Generator | None = None,
    callback: StreamCallback | None = None,
) -> DecodeResult:
    def rule(draft: Draft, logits: torch.Tensor) -> Verification:
        return bild_verify(draft, logits, config, sampling, generator)

    return draft_verify_loop(
        target,
        drafter,
        prompts,
        rule,
        sampling=sampling,
        stop=stop,
        gamma=FixedGamma(config.max_small_tokens),
        min_confidence=config.fallback_threshold,
        generator=generator,
        callback=callback,
    )
