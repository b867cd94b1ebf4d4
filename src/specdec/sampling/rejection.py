"""Modified rejection sampling (Chen et al. 2023, Leviathan et al. 2023): verify γ draft tokens at once.

Vocabulary, following the paper: p is the draft distribution the draft tokens were sampled from, q the
target distribution, γ the draft length. A draft token is *accepted* with probability min(1, q/p); at the
first rejection a *resampled* token is drawn from the residual norm(max(0, q - p)); if all γ are
accepted, a *bonus* token is drawn from the target's distribution after the last draft token. Every
emitted token is then distributed exactly as q.

Everything runs in float64 with an explicit generator. Accept tests and the resample/bonus draw use
separate random draws: reusing the uniform that caused a rejection to pick the resampled token biases it
(that uniform is known to lie in [min(1, q/p), 1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specdec.errors import InvalidArgumentError
from specdec.sampling.processors import sample


def acceptance_probability(p_token: torch.Tensor, q_token: torch.Tensor) -> torch.Tensor:
    """min(1, q/p) in float64.

    Where p == 0 the result is defined as 1. That is safe: a token drawn from p has p > 0 with
    probability one, so the value is never used by a correct caller; it only avoids a 0/0 that would
    turn into NaN and silently reject (or accept) through comparisons with NaN.
    """
    p64, q64 = p_token.to(torch.float64), q_token.to(torch.float64)
    positive = p64 > 0
    ratio = q64 / torch.where(positive, p64, torch.ones_like(p64))
    return torch.where(positive, ratio.clamp(max=1.0), torch.ones_like(ratio))


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, q - p)) over the last dim, float64: the law of the token resampled after a rejection.

    Where the residual has no mass (p == q), rejection has probability 0 and this row is never sampled;
    q is returned there so the result is always a valid distribution (no 0/0, nothing for
    ``torch.multinomial`` to choke on when a vectorised caller samples every row anyway).
    """
    p64, q64 = p.to(torch.float64), q.to(torch.float64)
    residual = (q64 - p64).clamp(min=0.0)
    mass = residual.sum(dim=-1, keepdim=True)
    return torch.where(mass > 0, residual / torch.where(mass > 0, mass, torch.ones_like(mass)), q64)


@dataclass
class Verification:
    """Outcome of verifying one block of γ draft tokens per row.

    Each row emits ``num_accepted`` draft tokens followed by ``next_tokens`` (resampled if
    ``num_accepted < γ``, bonus if ``num_accepted == γ``), so every step makes progress.
    """

    num_accepted: torch.Tensor
    next_tokens: torch.Tensor


def rejection_sample(
    draft_tokens: torch.Tensor,
    p: torch.Tensor,
    q: torch.Tensor,
    generator: torch.Generator | None = None,
    draft_lengths: torch.Tensor | None = None,
) -> Verification:
    """Accept/resample/bonus for a batch; the emitted tokens are distributed exactly as q.

    ``draft_tokens`` [B, γ], ``p`` [B, γ, V] (the distributions they were drawn from; a deterministic
    drafter passes one-hot rows, which keeps the maths exact), ``q`` [B, γ+1, V] (target at the same
    positions plus the one after the last draft token). Vectorised over the batch and over γ: the
    accepted prefix is the cumulative product of the per-position accept tests.

    ``draft_lengths`` [B] lets rows propose fewer than γ tokens (a lookup drafter may find fewer):
    positions past a row's length are never accepted, and a row that accepts all of its own draft
    takes its bonus token from q at that position, exactly as if its γ were its length.
    """
    _check_shapes(draft_tokens, p, q)
    batch, gamma = draft_tokens.shape
    p64, q64 = p.to(torch.float64), q.to(torch.float64)
    index = draft_tokens.long().unsqueeze(-1)
    p_draft = p64.gather(-1, index).squeeze(-1)
    q_draft = q64[:, :gamma].gather(-1, index).squeeze(-1)

    uniforms = torch.rand(batch, gamma, dtype=torch.float64, device=p64.device, generator=generator)
    accepted = uniforms < acceptance_probability(p_draft, q_draft)
    lengths = _lengths(draft_lengths, batch, gamma, p64.device)
    accepted &= torch.arange(gamma, device=p64.device) < lengths[:, None]
    num_accepted = accepted.long().cumprod(dim=-1).sum(dim=-1)

    rows = torch.arange(batch, device=p64.device)
    q_next = q64[rows, num_accepted]
    # Rows that accepted their whole draft take the bonus from q at that position; the residual
    # computed for them (against whatever p holds there) is discarded.
    residual = residual_distribution(p64[rows, num_accepted.clamp(max=gamma - 1)], q_next)
    bonus = (num_accepted == lengths).unsqueeze(-1)
    next_tokens = sample(torch.where(bonus, q_next, residual), generator)
    return Verification(num_accepted=num_accepted, next_tokens=next_tokens)


def greedy_verify(
    draft_tokens: torch.Tensor, target_tokens: torch.Tensor, draft_lengths: torch.Tensor | None = None
) -> Verification:
    """Greedy verification: accept the longest prefix on which the draft equals the target's argmax.

    This is rejection sampling with one-hot p and q, written without distributions so greedy decoding
    stays bit-exact and never touches a random generator.
    """
    _check_draft(draft_tokens)
    batch, gamma = draft_tokens.shape
    if tuple(target_tokens.shape) != (batch, gamma + 1):
        raise InvalidArgumentError(
            f"target_tokens must be [B, γ+1] = {(batch, gamma + 1)} for draft_tokens "
            f"{tuple(draft_tokens.shape)}, got {tuple(target_tokens.shape)}"
        )
    matches = draft_tokens == target_tokens[:, :gamma]
    lengths = _lengths(draft_lengths, batch, gamma, draft_tokens.device)
    matches &= torch.arange(gamma, device=draft_tokens.device) < lengths[:, None]
    num_accepted = matches.long().cumprod(dim=-1).sum(dim=-1)
    next_tokens = target_tokens.gather(1, num_accepted.unsqueeze(1)).squeeze(1).long()
    return Verification(num_accepted=num_accepted, next_tokens=next_tokens)


def _lengths(draft_lengths: torch.Tensor | None, batch: int, gamma: int, device) -> torch.Tensor:
    if draft_lengths is None:
        return torch.full((batch,), gamma, dtype=torch.long, device=device)
    lengths = draft_lengths.to(device=device, dtype=torch.long)
    if tuple(lengths.shape) != (batch,) or bool(((lengths < 0) | (lengths > gamma)).any()):
        raise InvalidArgumentError(f"draft_lengths must be [B] = [{batch}] with values in [0, {gamma}]")
    return lengths


def _check_draft(draft_tokens: torch.Tensor) -> None:
    shape = tuple(draft_tokens.shape)
    if draft_tokens.dim() != 2 or shape[1] < 1:
        raise InvalidArgumentError(f"draft_tokens must be [B, γ] with γ >= 1, got {shape}")
    if draft_tokens.is_floating_point() or draft_tokens.is_complex():
        raise InvalidArgumentError(f"draft_tokens must hold integer token ids, got {draft_tokens.dtype}")


def _check_shapes(draft_tokens: torch.Tensor, p: torch.Tensor, q: torch.Tensor) -> None:
    _check_draft(draft_tokens)
    batch, gamma = draft_tokens.shape
    if p.dim() != 3 or tuple(p.shape[:2]) != (batch, gamma):
        raise InvalidArgumentError(
            f"p must be [B, γ, V] = [{batch}, {gamma}, V] for draft_tokens {tuple(draft_tokens.shape)}, "
            f"got {tuple(p.shape)}"
        )
    vocab = p.shape[2]
    if tuple(q.shape) != (batch, gamma + 1, vocab):
        raise InvalidArgumentError(
            f"q must be [B, γ+1, V] = {(batch, gamma + 1, vocab)} (target at each draft position plus the "
            f"bonus position), got {tuple(q.shape)}"
        )
