"""Speculative sampling (Chen et al. 2023): draft γ tokens, score γ+1 positions in one target call,
keep the longest accepted prefix plus one token from the target. Lossless: greedy output is the
target's greedy output, sampled output follows the target's distribution exactly.

Two verify rules for sampling, both lossless:

- ``"coupled"`` (default): the draft samples with the same position-keyed noise the target's own
  choice uses (Gumbel-max), and a draft token is kept when it equals the target's choice. Every
  emitted token is then exactly the token plain decoding draws with the same seed, so a seeded
  text is the same with any drafter, any γ schedule and any batch: speculation changes speed only.
  Per token it accepts at least (1 − TV)/(1 + TV), against the 1 − TV = Σ min(p, q) of rejection
  sampling, and exactly as often for deterministic drafts (prompt lookup: q(d) either way).
- ``"rejection"``: Chen et al.'s modified rejection sampling, the highest acceptance a lossless rule
  can have; same seed ⇒ same text only for the same drafter and the same γ schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F

from specdec.decoders.common import Request, target_choice
from specdec.decoders.gamma import make_gamma_policy
from specdec.decoders.loop import DraftVerifyLoop
from specdec.decoders.method import DecodingMethod
from specdec.decoders.policy import GammaPolicy
from specdec.drafters import Draft, Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.sampling import (
    Draws,
    Sampling,
    TreeVerification,
    Verification,
    greedy_tokens,
    logits_to_probs,
    match_verify,
    rejection_sample,
    tree_match_verify,
    tree_rejection_sample,
)
from specdec.sampling.tree import TreeChoose
from specdec.sampling.verification import Choose

VERIFY_RULES = ("coupled", "rejection")


def tree_choices(logits: torch.Tensor, sampling: Sampling, draws: Draws) -> TreeChoose:
    """The target's own choice at block positions, its randomness keyed by depth (the output offset)."""
    if sampling.greedy:
        argmax = greedy_tokens(logits).cpu()
        return lambda pos, depth, rows: argmax[rows, pos]

    def choose(pos: torch.Tensor, depth: int, rows: torch.Tensor) -> torch.Tensor:
        at = logits[rows.to(logits.device), pos.to(logits.device)]
        return target_choice(at, sampling, draws, depth, rows)

    return choose


def target_choices(logits: torch.Tensor, sampling: Sampling, draws: Draws) -> Choose:
    """The target's own choice at block position i, computed only for the rows that reach it."""
    if sampling.greedy:
        argmax = greedy_tokens(logits).cpu()
        return lambda i, rows: argmax[rows, i]
    return lambda i, rows: target_choice(logits[rows.to(logits.device), i], sampling, draws, i, rows)


def coupled_verify(
    draft: Draft, logits: torch.Tensor, sampling: Sampling, draws: Draws
) -> Verification | TreeVerification:
    """Keep draft tokens while they equal the target's own choice; emit its choice at the first miss."""
    if draft.parents is not None:
        choose = tree_choices(logits, sampling, draws)
        return tree_match_verify(draft.tokens, draft.parents, choose, draft.depth_caps)
    return match_verify(draft.tokens, target_choices(logits, sampling, draws), draft.row_lengths())


def rejection_verify(
    draft: Draft, logits: torch.Tensor, sampling: Sampling, draws: Draws
) -> Verification | TreeVerification:
    """Modified rejection sampling against q = the target's sampling distribution at each position."""
    if sampling.greedy or draft.gamma == 0:  # one-hot q (or nothing to test): matching is the same rule
        return coupled_verify(draft, logits, sampling, draws)
    q = logits_to_probs(logits, sampling).cpu()
    if draft.parents is not None:
        probs = None if draft.probs is None else draft.probs.cpu()
        return tree_rejection_sample(draft.tokens, draft.parents, probs, q, draws, draft.depth_caps)
    p = draft.probs
    if p is None:  # a deterministic proposal is a one-hot p
        p = F.one_hot(draft.tokens, q.shape[-1]).to(q.dtype)
    return rejection_sample(draft.tokens, p.cpu(), q, draws, draft_lengths=draft.row_lengths())


@dataclass(frozen=True)
class SpeculativeSampling(DecodingMethod):
    """Lossless speculative sampling with a γ policy and a verify rule.

    ``gamma``: an int (fixed γ), ``"adaptive"`` (cost model, :class:`~specdec.decoders.gamma.AdaptiveGamma`),
    ``"heuristic"`` (HF's +2/−1) or a :class:`~specdec.decoders.gamma.GammaPolicy` instance (kept
    across calls; a name gives each call a fresh policy). ``verify``: ``"coupled"`` or ``"rejection"``.
    """

    gamma: int | str | GammaPolicy = "adaptive"
    verify: str = "coupled"
    name: ClassVar[str] = "sps"

    def __post_init__(self) -> None:
        make_gamma_policy(self.gamma)  # validates
        if self.verify not in VERIFY_RULES:
            raise InvalidArgumentError(f"verify must be one of {VERIFY_RULES}, got {self.verify!r}")

    def loop(self, target: Engine, drafter: Drafter | None, request: Request) -> DraftVerifyLoop:
        rule = coupled_verify if self.verify == "coupled" else rejection_verify
        return DraftVerifyLoop(target, drafter, request, rule, policy=make_gamma_policy(self.gamma))
