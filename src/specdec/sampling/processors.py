"""Logits → probabilities → tokens, shared by every decoder.

The draft distribution p and the target distribution q must come out of the *same* pipeline, in the
same precision, or the modified rejection sampler no longer recovers q (a draft sampled from a bf16
distribution but scored against an fp32 one is a classic source of silent bias). Hence one function,
``logits_to_probs``, always in float64, and one way to draw from it, the Gumbel-max trick with
noise the caller supplies (see :mod:`specdec.sampling.noise` for where that noise comes from).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specdec.errors import InvalidArgumentError

# Slack when deciding whether the nucleus already reached ``top_p``: float64 softmax rounding must
# not decide whether a token sitting exactly on the boundary is kept.
_NUCLEUS_SLACK = 1e-12
# Top-p sorts only this many most likely tokens, the whole vocabulary only for rows whose nucleus is
# wider: on SmolLM2's 49,152 tokens, 64 rows cost 32-45 ms through topk against ~300 ms sorted (1 thread).
NUCLEUS_CANDIDATES = 1024


@dataclass(frozen=True)
class SamplingConfig:
    """How target and draft logits become distributions; validated once, so the hot loop never checks."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        t = _as_float(self.temperature)
        if t is None or not math.isfinite(t) or t < 0:
            raise InvalidArgumentError(
                f"temperature must be a finite number >= 0 (0 means greedy), got {self.temperature!r}"
            )
        k = self.top_k
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgumentError(f"top_k must be an integer >= 0 (0 disables top-k), got {k!r}")
        p = _as_float(self.top_p)
        if p is None or not 0 < p <= 1:
            raise InvalidArgumentError(f"top_p must be in (0, 1] (1 disables top-p), got {self.top_p!r}")
        # Plain floats from here on (a huge int temperature would overflow inside torch).
        object.__setattr__(self, "temperature", t)
        object.__setattr__(self, "top_p", p)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class RowSampling:
    """Each row's own :class:`SamplingConfig`: requests with different settings in one batch (greedy
    rows beside sampled ones). Everything that takes a config takes one of these for a batch."""

    configs: tuple[SamplingConfig, ...]

    @property
    def greedy(self) -> bool:
        """Whether every row is greedy (then no distribution needs building)."""
        return all(c.greedy for c in self.configs)

    def select(self, rows: torch.Tensor) -> RowSampling:
        """The configs of batch positions ``rows``."""
        return RowSampling(tuple(self.configs[r] for r in rows.tolist()))

    def groups(self) -> list[tuple[SamplingConfig, torch.Tensor]]:
        """Each distinct config with the rows that use it."""
        rows: dict[SamplingConfig, list[int]] = {}
        for row, config in enumerate(self.configs):
            rows.setdefault(config, []).append(row)
        return [(config, torch.tensor(index)) for config, index in rows.items()]


Sampling = SamplingConfig | RowSampling


def _as_float(value) -> float | None:
    """A real number as a float; None for anything else (bools, strings, numbers too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def greedy_tokens(logits: torch.Tensor) -> torch.Tensor:
    """Argmax tokens; kept beside ``logits_to_probs`` so greedy paths never build a distribution.

    Half-precision logits are upcast first (exactly, so the same first maximum wins): CPU argmax over
    a bf16 vocabulary row is unvectorised, ~5x slower than the cast plus an fp32 argmax. A large CPU
    vocabulary goes through :func:`blockwise_argmax`: the same tokens, a third of the time.
    """
    if logits.dtype in (torch.bfloat16, torch.float16):
        logits = logits.float()
    if _blockwise(logits):
        return blockwise_argmax(logits, VOCAB_BLOCK)
    return logits.argmax(dim=-1)


# CPU argmax and topk over a vocabulary row run one scalar loop (~70 µs and ~250 µs for SmolLM2's
# 49,152 logits on a Cascade Lake Xeon, 0.5 ms for a 7-node verify block's argmax), where a max
# reduction is vectorised (~15 µs): the row's blocks of this many logits are reduced by max first and
# only the winning blocks searched. Rows narrower than a few blocks, or not a multiple of one, and
# accelerators keep the plain kernels.
VOCAB_BLOCK = 1024


def _blockwise(logits: torch.Tensor) -> bool:
    vocab = logits.shape[-1]
    return logits.device.type == "cpu" and vocab >= 4 * VOCAB_BLOCK and vocab % VOCAB_BLOCK == 0


def blockwise_argmax(logits: torch.Tensor, block: int) -> torch.Tensor:
    """``logits.argmax(-1)`` for a last dimension that is a multiple of ``block``: the first block whose
    max is the row's (max propagates NaN and argmax ranks it highest, as ``argmax`` does), then the first
    maximum inside it, so ties and NaN resolve to the same index as ``argmax``'s."""
    blocks = logits.unflatten(-1, (-1, block))  # [..., blocks, block], a view
    best = blocks.amax(-1).argmax(-1, keepdim=True)  # [..., 1]
    inside = blocks.gather(-2, best[..., None].expand(*best.shape, block)).squeeze(-2)
    return best.squeeze(-1) * block + inside.argmax(-1)


def top_tokens(logits: torch.Tensor, k: int) -> torch.Tensor:
    """The ids of the ``k`` largest logits per row, largest first (``topk(k).indices``; tied values may
    come in another order). A large CPU vocabulary searches only the ``k`` blocks with the largest maxima,
    which hold the ``k`` largest values."""
    if k >= logits.shape[-1] // VOCAB_BLOCK or not _blockwise(logits):
        return logits.topk(k, dim=-1).indices
    blocks = logits.unflatten(-1, (-1, VOCAB_BLOCK))
    chosen = blocks.amax(-1).topk(k, dim=-1).indices  # [..., k]
    candidates = blocks.gather(-2, chosen[..., None].expand(*chosen.shape, VOCAB_BLOCK))
    inside = candidates.flatten(-2).topk(k, dim=-1).indices  # [..., k] into the k blocks side by side
    return chosen.gather(-1, inside // VOCAB_BLOCK) * VOCAB_BLOCK + inside % VOCAB_BLOCK


def max_probability(logits: torch.Tensor) -> torch.Tensor:
    """max_y softmax(logits)(y) in float64: a model's confidence in its own top token.

    Taken at temperature 1 without truncation, so a confidence threshold means the same in greedy
    and sampled decoding (top-p renormalisation would inflate it).
    """
    logits = logits.to(torch.float64)
    return torch.exp(logits.max(dim=-1).values - torch.logsumexp(logits, dim=-1))


def logits_to_probs(logits: torch.Tensor, config: Sampling) -> torch.Tensor:
    """Float64 distributions of ``logits`` ``[B, ..., V]`` under ``config``, one per row for a
    :class:`RowSampling` (see :func:`distribution`)."""
    if isinstance(config, SamplingConfig):
        return distribution(logits, config)
    groups = config.groups()
    if len(groups) == 1:
        return distribution(logits, groups[0][0])
    out = torch.empty(logits.shape, dtype=torch.float64, device=logits.device)
    for group, rows in groups:
        index = rows.to(logits.device)
        out[index] = distribution(logits[index], group)
    return out


def distribution(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Float64 distribution after temperature, then top-k, then top-p.

    Greedy returns the one-hot of the argmax, so a decoder can run the same rejection maths for greedy
    and sampled decoding. Top-k uses ``torch.topk`` (its output is already sorted, so a following top-p
    needs no sort at all); top-p alone takes the :data:`NUCLEUS_CANDIDATES` most likely tokens the same
    way and sorts the whole vocabulary only for rows whose nucleus is wider, because sorting it at every
    position is what makes peers' sampling slow on large vocabularies.
    """
    logits = logits.to(torch.float64)
    vocab = logits.shape[-1]
    if config.greedy:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), vocab).to(torch.float64)
    # Shift before scaling: a tiny temperature then sends other tokens to −inf, never the top one to +inf
    # (inf − inf would turn the distribution into NaNs).
    logits = (logits - logits.max(dim=-1, keepdim=True).values) / config.temperature
    if 0 < config.top_k < vocab:
        values, indices = torch.topk(logits, config.top_k, dim=-1)
        kept = _nucleus(torch.softmax(values, dim=-1), config.top_p)
        return torch.zeros_like(logits).scatter_(-1, indices, kept)
    probs = torch.softmax(logits, dim=-1)
    if config.top_p >= 1:
        return probs
    return _top_p(probs, config.top_p)


def _top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """The nucleus of ``probs`` [B, V]. Where the most likely candidates already hold ``top_p`` of the
    mass, every other token has that much before it and is dropped anyway, so their nucleus is the
    whole vocabulary's; the other rows are sorted in full."""
    values, indices = torch.topk(probs, min(NUCLEUS_CANDIDATES, probs.shape[-1]), dim=-1)
    out = torch.zeros_like(probs).scatter_(-1, indices, _nucleus(values, top_p))
    wider = values.sum(dim=-1) < top_p - _NUCLEUS_SLACK
    if bool(wider.any()):
        sorted_probs, order = probs[wider].sort(dim=-1, descending=True)
        out[wider] = torch.zeros_like(sorted_probs).scatter_(-1, order, _nucleus(sorted_probs, top_p))
    return out


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


def gumbel_argmax(probs: torch.Tensor, gumbel: torch.Tensor) -> torch.Tensor:
    """argmax(log p + G): a draw from ``probs`` when ``G`` is i.i.d. standard Gumbel (the Gumbel-max trick).

    A zero-probability token scores log 0 = −inf and is never drawn; token 0 is an index like any other.
    Unlike inverse-CDF tricks there is no cumulative sum that can round past 1, and unlike a
    generator stream the draw is a pure function of the noise, which callers key by token position.
    """
    return (probs.to(torch.float64).log() + gumbel).argmax(dim=-1)
