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

from specdec.sampling.config import Sampling, SamplingConfig

# Slack when deciding whether the nucleus already reached ``top_p``: float64 softmax rounding must
# not decide whether a token sitting exactly on the boundary is kept.
_NUCLEUS_SLACK = 1e-12
# Top-p sorts only the tokens within this many nats (after temperature) of the row's top token, and
# widens to the next bound for rows whose candidates hold less than top_p: on SmolLM2's chat rows at
# T 0.8, top-p 0.95, 7 nats leave a median 17 candidates and suffice for ~93 % of rows, 14 nats for all
# but the widest. Sorting all 49,152 tokens costs 4-11 ms a row on a 2-core Xeon, and torch.topk, even
# of 16 tokens, costs about what the threshold pass and its nonzero do together.
NUCLEUS_BOUNDS = (7.0, 14.0, math.inf)


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
    return torch.exp(logits.amax(dim=-1) - torch.logsumexp(logits, dim=-1))


@dataclass(frozen=True, eq=False)  # tensors have no single truth value to compare by
class Entries:
    """A float64 distribution over ``shape`` = [N, V] held by its entries: ``values[j]`` at row ``rows[j]``,
    token ``tokens[j]``, zero elsewhere. What top-k and top-p produce: a few dozen tokens of a large
    vocabulary, which a sampler can draw from without building and scanning the dense matrix."""

    rows: torch.Tensor
    tokens: torch.Tensor
    values: torch.Tensor
    shape: tuple[int, int]

    def dense(self) -> torch.Tensor:
        out = torch.zeros(self.shape, dtype=torch.float64, device=self.values.device)
        return out.index_put_((self.rows, self.tokens), self.values)


def logits_to_probs(logits: torch.Tensor, config: Sampling) -> torch.Tensor:
    """Float64 distributions of ``logits`` ``[B, ..., V]`` under ``config``, one per row for a
    :class:`RowSampling` (see :func:`distribution`)."""
    if (shared := _shared_config(config)) is not None:
        return distribution(logits, shared)
    out = torch.empty(logits.shape, dtype=torch.float64, device=logits.device)
    for group, rows in config.groups():
        index = rows.to(logits.device)
        out[index] = distribution(logits[index], group)
    return out


def sampling_distribution(logits: torch.Tensor, config: Sampling) -> torch.Tensor | Entries:
    """``logits_to_probs(logits, config)`` for ``logits`` [N, V] in its cheapest exact form: the
    :class:`Entries` of a top-k or top-p distribution (one config for every row), else dense."""
    shared = _shared_config(config)
    if shared is None or shared.greedy or not _truncates(shared, logits.shape[-1]):
        return logits_to_probs(logits, config)
    return _truncated(_scaled(logits, shared), shared)


def _shared_config(config: Sampling) -> SamplingConfig | None:
    """The one config every row samples with, or None where rows differ."""
    if isinstance(config, SamplingConfig):
        return config
    groups = config.groups()
    return groups[0][0] if len(groups) == 1 else None


def _truncates(config: SamplingConfig, vocab: int) -> bool:
    return 0 < config.top_k < vocab or config.top_p < 1


def _scaled(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Float64 logits shifted to a top of 0, then divided by the temperature. Shifting first means a tiny
    temperature sends other tokens to −inf, never the top one to +inf (inf − inf would be NaN)."""
    logits = logits.to(torch.float64)
    return (logits - logits.amax(dim=-1, keepdim=True)) / config.temperature


def distribution(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """Float64 distribution after temperature, then top-k, then top-p.

    Greedy returns the one-hot of the argmax, so a decoder can run the same rejection maths for greedy
    and sampled decoding. Top-k uses ``torch.topk`` (its output is already sorted, so a following top-p
    needs no sort at all); top-p alone sorts only the tokens close to the top one (see
    :func:`_top_p`), because sorting the whole vocabulary at every position is what makes peers'
    sampling slow on large vocabularies.
    """
    vocab = logits.shape[-1]
    if config.greedy:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), vocab).to(torch.float64)
    scaled = _scaled(logits, config)
    if not _truncates(config, vocab):
        return torch.softmax(scaled, dim=-1)
    return _truncated(scaled.reshape(-1, vocab), config).dense().view(scaled.shape)


def _truncated(scaled: torch.Tensor, config: SamplingConfig) -> Entries:
    """Top-k, then top-p, of :func:`_scaled` logits [N, V]."""
    n, vocab = scaled.shape
    if 0 < config.top_k < vocab:
        values, tokens = torch.topk(scaled, config.top_k, dim=-1)
        kept = _nucleus(torch.softmax(values, dim=-1), config.top_p)
        rows = torch.arange(n, device=scaled.device).repeat_interleave(config.top_k)
        return Entries(rows, tokens.flatten(), kept.flatten(), (n, vocab))
    return _top_p(scaled, torch.softmax(scaled, dim=-1), config.top_p)


def _top_p(scaled: torch.Tensor, probs: torch.Tensor, top_p: float) -> Entries:
    """The nucleus of ``probs`` [N, V] (``scaled``: the logits they come from).

    The candidates within a bound of :data:`NUCLEUS_BOUNDS` of a row's top logit are its most likely
    tokens; where they hold ``top_p`` of the mass, every other token has that much before it and is
    dropped anyway, so sorting the candidates alone gives the whole vocabulary's nucleus (ties in
    token order). Rows whose candidates fall short try the next, wider bound; the last takes them all.
    """
    pending = torch.arange(len(probs), device=probs.device)
    parts: list[tuple[torch.Tensor, ...]] = []
    for bound in NUCLEUS_BOUNDS:
        everyone = len(pending) == len(probs)  # spares the copies of the first, usually last, round
        rows, tokens = ((scaled if everyone else scaled[pending]) >= -bound).nonzero(as_tuple=True)
        values = probs[rows if everyone else pending[rows], tokens]
        values, columns, rows, tokens = _descending_rows(values, rows, tokens, len(pending))
        kept = _nucleus(values, top_p)[rows, columns]
        done = values.sum(dim=-1) >= top_p  # no slack: a token outside must have ≥ top_p before it
        if bound == NUCLEUS_BOUNDS[-1] or bool(done.all()):
            parts.append((pending[rows], tokens, kept))
            break
        settled = done[rows]
        parts.append((pending[rows[settled]], tokens[settled], kept[settled]))
        pending = pending[~done]
    rows, tokens, kept = (torch.cat(column) for column in zip(*parts, strict=True))
    return Entries(rows, tokens, kept, tuple(probs.shape))


def _descending_rows(
    values: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Entries ``values[j]`` of row ``rows[j]`` < ``n`` at token ``tokens[j]`` (row-major, as ``nonzero``
    lists them) as a zero-padded ``[n, m]`` matrix whose rows are in descending order, ties in token
    order; with each entry's column there and the reordered rows and tokens."""
    order = values.sort(descending=True, stable=True).indices
    if n > 1:
        order = order[rows[order].sort(stable=True).indices]
    rows, values, tokens = rows[order], values[order], tokens[order]
    columns = torch.arange(len(rows), device=rows.device)
    if n > 1:
        columns -= torch.searchsorted(rows, rows)
    padded = values.new_zeros(n, int(columns.max()) + 1 if len(columns) else 1)
    padded[rows, columns] = values
    return padded, columns, rows, tokens


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
