"""Logits → probabilities → tokens, shared by every decoder.

The draft distribution p and the target distribution q must come out of the *same* pipeline, in the
same precision, or the modified rejection sampler no longer recovers q (a draft sampled from a bf16
distribution but scored against an fp32 one is a classic source of silent bias). Hence one function,
``logits_to_probs``, always in float64, and one ``sample`` that takes an explicit generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specdec.errors import InvalidArgumentError

# Slack when deciding whether the nucleus already reached ``top_p``: float64 softmax rounding must
# not decide whether a token sitting exactly on the boundary is kept.
_NUCLEUS_SLACK = 1e-12


@dataclass(frozen=True)
class SamplingConfig:
    """How target and draft logits become distributions; validated once, so the hot loop never checks."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
            raise InvalidArgumentError(
                f"temperature must be a finite number >= 0 (0 means greedy), got {t!r}"
            )
        k = self.top_k
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgumentError(f"top_k must be an integer >= 0 (0 disables top-k), got {k!r}")
        p = self.top_p
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1:
            raise InvalidArgumentError(f"top_p must be in (0, 1] (1 disables top-p), got {p!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def greedy_tokens(logits: torch.Tensor) -> torch.Tensor:
    """Argmax tokens; kept beside ``logits_to_probs`` so greedy paths never build a distribution."""
    return logits.argmax(dim=-1)


def max_probability(logits: torch.Tensor) -> torch.Tensor:
    """max_y softmax(logits)(y) in float64: a model's confidence in its own top token.

    Taken at temperature 1 without truncation, so a confidence threshold means the same in greedy
    and sampled decoding (top-p renormalisation would inflate it).
    """
    logits = logits.to(torch.float64)
    return torch.exp(logits.max(dim=-1).values - torch.logsumexp(logits, dim=-1))


def logits_to_probs(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Float64 distribution after temperature, then top-k, then top-p.

    Greedy returns the one-hot of the argmax, so a decoder can run the same rejection maths for greedy
    and sampled decoding. Top-k uses ``torch.topk`` (its output is already sorted, so a following top-p
    needs no sort at all); a full-vocabulary sort happens only for top-p without top-k, because sorting
    the whole vocabulary at every position is what makes peers' sampling slow on large vocabularies.
    """
    logits = logits.to(torch.float64)
    vocab = logits.shape[-1]
    if config.greedy:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), vocab).to(torch.float64)
    logits = logits / config.temperature
    if 0 < config.top_k < vocab:
        values, indices = torch.topk(logits, config.top_k, dim=-1)
        kept = _nucleus(torch.softmax(values, dim=-1), config.top_p)
        return torch.zeros_like(logits).scatter_(-1, indices, kept)
    probs = torch.softmax(logits, dim=-1)
    if config.top_p >= 1:
        return probs
    sorted_probs, indices = probs.sort(dim=-1, descending=True)
    return torch.zeros_like(probs).scatter_(-1, indices, _nucleus(sorted_probs, config.top_p))


def _nucleus(sorted_probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the shortest prefix of descending ``sorted_probs`` whose mass reaches ``top_p``, renormalised.

    A token is dropped once the mass *before* it already reaches ``top_p``; the first token has
    nothing before it, so at least one token always survives however small ``top_p`` is.
    """
    if top_p >= 1:
        return sorted_probs
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
    drop = mass_before >= top_p - _NUCLEUS_SLACK
    drop[..., 0] = False
    kept = sorted_probs.masked_fill(drop, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per leading index, drawn with ``generator`` only.

    Seeding is the caller's job: reseeding in here would make every draw of a decoding loop identical.
    ``torch.multinomial`` is used rather than a hand-rolled exponential or inverse-CDF trick, whose edge
    cases (a zero draw, a cumulative sum that rounds past 1) are how peers lost token 0 or picked
    zero-probability tokens.
    """
    leading = probs.shape[:-1]
    flat = probs.reshape(-1, probs.shape[-1])
    if flat.shape[0] == 0:
        return torch.zeros(leading, dtype=torch.long, device=probs.device)
    return torch.multinomial(flat, 1, generator=generator).reshape(leading)
