"""Modified rejection sampling (Chen et al. 2023, Leviathan et al. 2023): verify γ draft tokens at once.

Vocabulary, following the paper: p is the draft distribution the draft tokens were sampled from, q the
target distribution, γ the draft length. A draft token is *accepted* with probability min(1, q/p); at the
first rejection a *resampled* token is drawn from the residual norm(max(0, q - p)); if all γ are
accepted, a *bonus* token is drawn from the target's distribution after the last draft token. Every
emitted token is then distributed exactly as q.

Everything runs in float64 with explicit randomness. Accept tests and the resample/bonus draw use
separate random draws: reusing the uniform that caused a rejection to pick the resampled token biases it
(that uniform is known to lie in [min(1, q/p), 1)).

Its acceptance, Σ min(p, q) per token, is the highest any lossless rule can have, but its output
depends on the draft tokens: the same seed gives different texts with different drafters or γ
schedules. :func:`specdec.sampling.verification.match_verify` with Gumbel-coupled choices gives up
a little acceptance for texts that depend on the seed alone.
"""

from __future__ import annotations

import torch

from specdec.errors import InvalidArgumentError
from specdec.sampling.noise import Draws, GeneratorDraws, Stream
from specdec.sampling.verification import Verification, check_draft, check_lengths


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


def rejection_sample(
    draft_tokens: torch.Tensor,
    p: torch.Tensor,
    q: torch.Tensor,
    draws: Draws | torch.Generator | None = None,
    draft_lengths: torch.Tensor | None = None,
) -> Verification:
    """Accept/resample/bonus for a batch; the emitted tokens are distributed exactly as q.

    ``draft_tokens`` [B, γ], ``p`` [B, γ, V] (the distributions they were drawn from; a deterministic
    drafter passes one-hot rows, which keeps the maths exact), ``q`` [B, γ+1, V] (target at the same
    positions plus the one after the last draft token). Vectorised over the batch and over γ: the
    accepted prefix is the cumulative product of the per-position accept tests.

    ``draws`` supplies the randomness: the decoders pass keyed draws (one uniform per position from the
    ``ACCEPT`` stream, the resample or bonus token from the ``REDRAW`` stream at its own position); a
    ``torch.Generator`` (or None, the global one) draws in call order, for vectorised use.

    ``draft_lengths`` [B] lets rows propose fewer than γ tokens (a lookup drafter may find fewer):
    positions past a row's length are never accepted, and a row that accepts all of its own draft
    takes its bonus token from q at that position, exactly as if its γ were its length; a row that
    proposed nothing takes the target's own draw (stream ``DRAW``), as a step without a draft does, so
    its token does not depend on what the other rows drafted.
    """
    _check_shapes(draft_tokens, p, q)
    if draws is None or isinstance(draws, torch.Generator):
        draws = GeneratorDraws(draws)
    batch, gamma = draft_tokens.shape
    p64, q64 = p.to(torch.float64), q.to(torch.float64)
    index = draft_tokens.long().unsqueeze(-1)
    p_draft = p64.gather(-1, index).squeeze(-1)
    q_draft = q64[:, :gamma].gather(-1, index).squeeze(-1)

    rows = torch.arange(batch).repeat_interleave(gamma)
    offsets = torch.arange(gamma).repeat(batch)
    uniforms = draws.uniform(offsets, rows, Stream.ACCEPT).reshape(batch, gamma).to(p64.device)
    accepted = uniforms < acceptance_probability(p_draft, q_draft)
    lengths = check_lengths(draft_lengths, batch, gamma).to(p64.device)
    accepted &= torch.arange(gamma, device=p64.device) < lengths[:, None]
    num_accepted = accepted.long().cumprod(dim=-1).sum(dim=-1)

    index = torch.arange(batch, device=p64.device)
    q_next = q64[index, num_accepted]
    # Rows that accepted their whole draft take the bonus from q at that position; the residual
    # computed for them (against whatever p holds there) is discarded.
    residual = residual_distribution(p64[index, num_accepted.clamp(max=gamma - 1)], q_next)
    bonus = (num_accepted == lengths).unsqueeze(-1)
    drawn = torch.where(bonus, q_next, residual)
    next_token = draws.sample(drawn, num_accepted.cpu(), torch.arange(batch), Stream.REDRAW)
    plain = (lengths == 0).cpu()
    if bool(plain.any()):  # nothing drafted: the target's own draw, as a step without a draft makes it
        rows = plain.nonzero().flatten()
        next_token[rows.to(p64.device)] = draws.sample(q_next[rows.to(p64.device)], 0, rows, Stream.DRAW)
    return Verification(num_accepted=num_accepted, next_token=next_token)


def _check_shapes(draft_tokens: torch.Tensor, p: torch.Tensor, q: torch.Tensor) -> None:
    check_draft(draft_tokens)
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
