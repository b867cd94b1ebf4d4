"""Random draws addressed by (row seed, token position, stream): a seeded text never depends on the schedule.

A speculative decoder consumes randomness in an order set by γ, by timings (adaptive γ), by the
drafter and by the other rows of the batch. Drawing from one generator in that order makes the
same seed give different texts. Here every random number is a pure function of

- the row's key (derived from the caller's seed and the sample index, never from its batch slot),
- the output position of the token it helps decide, and
- a stream: ``DRAW`` (a position's first draw, the one plain decoding makes), ``ACCEPT`` (the accept
  test of modified rejection sampling) and ``REDRAW`` (a second draw after a rejection).

The numbers themselves come from a counter-based generator (SplitMix64's output function applied to
``key + (i + 1)·γ`` for the i-th number of a (row, position, stream) key), computed as tensor ops on
the device of the logits they perturb: no generator object per row, no vocabulary-sized tensor built
on the host, and noise only where it matters (a draw from a truncated distribution, top-k or top-p,
needs numbers only at the tokens it can pick, and they are the same numbers a full-vocabulary draw
uses at those tokens).

Draws for position t are therefore the same whichever step, block offset or batch slot asks for
them. The losslessness proofs still hold: the token emitted at position t is decided by draws at t
alone, and those are independent of every earlier position's draws, so they are independent of the
prefix they are applied to. A draft token guessed with position t's draws and then discarded does
not change the prefix, so reusing position t's draws when t is decided for real is exact.
"""

from __future__ import annotations

import math
import secrets
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import IntEnum

import torch

from specdec.sampling.processors import Entries, gumbel_argmax

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment γ
_TINY = torch.finfo(torch.float64).tiny


class Stream(IntEnum):
    DRAW = 0  # a position's first draw: plain decoding, the draft, the coupled target choice
    ACCEPT = 1  # accept tests of modified rejection sampling
    REDRAW = 2  # the resampled or bonus token of modified rejection sampling


def _splitmix64(x: int) -> int:
    x = (x + _GOLDEN) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def mix(*parts: int) -> int:
    """A 64-bit key from a sequence of integers (splitmix64 chained over them)."""
    key = 0
    for part in parts:
        key = _splitmix64(key ^ (part & _MASK))
    return key


def row_keys(seeds: Sequence[int], num_samples: int) -> list[int]:
    """One key per row of a batch of ``len(seeds)`` prompts × ``num_samples``: (prompt's seed, sample index).

    The prompt's index is not part of the key, so a prompt's text does not depend on where in the
    batch it sits or on what else is in the batch.
    """
    return [mix(seed, sample) for seed in seeds for sample in range(num_samples)]


def fresh_seeds(count: int) -> list[int]:
    """Unseeded calls: independent random seeds from the OS."""
    return [secrets.randbits(64) for _ in range(count)]


def _signed(value: int) -> int:
    """A 64-bit pattern as the int64 holding the same bits."""
    value &= _MASK
    return value - (1 << 64) if value >> 63 else value


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns (torch's ``>>`` is arithmetic on signed integers)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def keyed_uniforms(keys: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """Float64 uniforms in [0, 1), the ``counters``-th numbers of SplitMix64 seeded with ``keys``.

    ``keys`` and ``counters`` are int64 tensors that broadcast together (a key is a 64-bit pattern held
    as int64); the result is ``_splitmix64(key + counter·γ) >> 11`` scaled by 2⁻⁵³, elementwise, on
    their device. Integer products wrap modulo 2⁶⁴ on every torch backend, which the hash relies on.
    """
    x = keys + (counters + 1) * _signed(_GOLDEN)
    x = (x ^ _shift_right(x, 30)) * _signed(0xBF58476D1CE4E5B9)
    x = (x ^ _shift_right(x, 27)) * _signed(0x94D049BB133111EB)
    x = x ^ _shift_right(x, 31)
    return _shift_right(x, 11).to(torch.float64) * 2.0**-53


def gumbel_from_uniform(uniform: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise −log(−log U); U = 0 is mapped to the smallest positive double, not −inf."""
    return -torch.log(-torch.log(uniform.clamp(min=_TINY)))


class Draws(ABC):
    """Uniforms and Gumbel noise for the rows of one decoding step.

    ``rows`` are batch positions (default: every row), ``offsets`` the position of the decided token
    relative to each row's first new token of this step (an int for all rows, or one per row).
    """

    @abstractmethod
    def uniforms(
        self,
        offsets: int | torch.Tensor,
        count: int,
        rows: torch.Tensor | None = None,
        stream: Stream = Stream.ACCEPT,
    ) -> torch.Tensor:
        """``[n, count]`` float64 uniforms in [0, 1): several independent ones per position (the accept
        tests of sibling draft tokens)."""

    @abstractmethod
    def gumbel_at(
        self,
        offsets: int | torch.Tensor,
        rows: torch.Tensor | None,
        row_index: torch.Tensor,
        tokens: torch.Tensor,
        stream: Stream = Stream.DRAW,
    ) -> torch.Tensor:
        """``[m]`` float64 Gumbel noise of token ``tokens[j]`` for the ``row_index[j]``-th of ``rows``,
        on the device of ``tokens``: the numbers :meth:`gumbel` gives at those entries."""

    def uniform(
        self, offsets: int | torch.Tensor, rows: torch.Tensor | None = None, stream: Stream = Stream.ACCEPT
    ) -> torch.Tensor:
        """``[n]`` float64 uniforms in [0, 1)."""
        return self.uniforms(offsets, 1, rows, stream)[:, 0]

    def gumbel(
        self,
        offsets: int | torch.Tensor,
        vocab: int,
        rows: torch.Tensor | None = None,
        stream: Stream = Stream.DRAW,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """``[n, vocab]`` float64 standard Gumbel noise (on ``device``; default the host)."""
        n = self._count(offsets, rows)
        row_index = torch.arange(n, device=device).repeat_interleave(vocab)
        tokens = torch.arange(vocab, device=device).repeat(n)
        return self.gumbel_at(offsets, rows, row_index, tokens, stream).reshape(n, vocab)

    def sample(
        self,
        probs: torch.Tensor | Entries,
        offsets: int | torch.Tensor,
        rows: torch.Tensor | None = None,
        stream: Stream = Stream.DRAW,
    ) -> torch.Tensor:
        """``[n]`` tokens drawn from ``probs`` ``[n, V]`` (dense, or its :class:`Entries`) by the
        Gumbel-max trick with this step's noise, on the device of ``probs``.

        Equal to ``gumbel_argmax(probs, self.gumbel(...))``, but where most of ``probs`` is zero (a
        top-k or top-p distribution, a residual) only the tokens it can pick get noise.
        """
        if isinstance(probs, torch.Tensor):
            support = probs > 0
            if 2 * int(support.sum()) >= support.numel():
                return gumbel_argmax(probs, self.gumbel(offsets, probs.shape[-1], rows, stream, probs.device))
            row_index, tokens = support.nonzero(as_tuple=True)
            probs = Entries(row_index, tokens, probs[row_index, tokens], tuple(probs.shape))
        row_index, tokens, (n, vocab) = probs.rows, probs.tokens, probs.shape
        scores = probs.values.to(torch.float64).log()  # −inf at a zero entry: never drawn
        scores += self.gumbel_at(offsets, rows, row_index, tokens, stream)
        best = scores.new_full((n,), -math.inf).scatter_reduce(0, row_index, scores, "amax")
        won = scores == best[row_index]  # the first maximal token, as argmax picks it
        return tokens.new_full((n,), vocab).scatter_reduce(0, row_index[won], tokens[won], "amin")

    def _count(self, offsets: int | torch.Tensor, rows: torch.Tensor | None) -> int:
        if rows is not None:
            return len(rows)
        if isinstance(offsets, torch.Tensor):
            return len(offsets)
        raise ValueError("draws need rows or per-row offsets to know how many rows there are")

    def select(self, rows: torch.Tensor) -> Draws:
        """The draws of batch positions ``rows`` as a batch of their own: what a drafter serving only
        those rows must draw with, so its guesses use the noise the target uses for them."""
        return SelectedDraws(self, rows)


class SelectedDraws(Draws):
    """Some rows of another :class:`Draws`; row i here is row ``rows[i]`` there."""

    def __init__(self, draws: Draws, rows: torch.Tensor):
        self.draws, self.rows = draws, torch.as_tensor(rows, dtype=torch.long)

    def _parent_rows(self, rows: torch.Tensor | None) -> torch.Tensor:
        return self.rows if rows is None else self.rows[rows.to(self.rows.device)]

    def _count(self, offsets: int | torch.Tensor, rows: torch.Tensor | None) -> int:
        return len(self.rows) if rows is None else len(rows)

    def uniforms(self, offsets, count, rows=None, stream=Stream.ACCEPT):
        return self.draws.uniforms(offsets, count, self._parent_rows(rows), stream)

    def gumbel_at(self, offsets, rows, row_index, tokens, stream=Stream.DRAW):
        return self.draws.gumbel_at(offsets, self._parent_rows(rows), row_index, tokens, stream)

    def gumbel(self, offsets, vocab, rows=None, stream=Stream.DRAW, device=None):
        return self.draws.gumbel(offsets, vocab, self._parent_rows(rows), stream, device)


class KeyedDraws(Draws):
    """Draws keyed by (row key, output position, stream): the decoders' source of randomness.

    Args:
        keys: each batch row's key (see :func:`row_keys`).
        starts: each batch row's output position of the first token this step decides.
    """

    def __init__(self, keys: Sequence[int], starts: Sequence[int]):
        self.keys, self.starts = list(keys), list(starts)

    def _count(self, offsets: int | torch.Tensor, rows: torch.Tensor | None) -> int:
        return len(self.keys) if rows is None else len(rows)

    def _position_keys(
        self, offsets: int | torch.Tensor, rows: torch.Tensor | None, stream: Stream
    ) -> torch.Tensor:
        """``[n]`` int64: the key of each asked row's (row key, position, stream)."""
        batch = list(range(len(self.keys))) if rows is None else rows.tolist()
        offs = [offsets] * len(batch) if isinstance(offsets, int) else offsets.tolist()
        keys = [mix(self.keys[b], self.starts[b] + o, int(stream)) for b, o in zip(batch, offs, strict=True)]
        return torch.tensor([_signed(k) for k in keys], dtype=torch.long)

    def uniforms(self, offsets, count, rows=None, stream=Stream.ACCEPT):
        keys = self._position_keys(offsets, rows, stream)
        return keyed_uniforms(keys[:, None], torch.arange(count)[None])

    def gumbel_at(self, offsets, rows, row_index, tokens, stream=Stream.DRAW):
        keys = self._position_keys(offsets, rows, stream).to(tokens.device)
        return gumbel_from_uniform(keyed_uniforms(keys[row_index], tokens))

    def gumbel(self, offsets, vocab, rows=None, stream=Stream.DRAW, device=None):
        keys = self._position_keys(offsets, rows, stream).to(device)
        return gumbel_from_uniform(keyed_uniforms(keys[:, None], torch.arange(vocab, device=device)[None]))


class GeneratorDraws(Draws):
    """Draws taken in call order from one generator: for vectorised use of the pure sampling functions
    (thousands of independent rows at once), where no schedule can reorder them."""

    def __init__(self, generator: torch.Generator | None = None):
        self.generator = generator

    def uniforms(self, offsets, count, rows=None, stream=Stream.ACCEPT):
        return torch.rand(self._count(offsets, rows), count, dtype=torch.float64, generator=self.generator)

    def gumbel_at(self, offsets, rows, row_index, tokens, stream=Stream.DRAW):
        uniform = torch.rand(len(tokens), dtype=torch.float64, generator=self.generator)
        return gumbel_from_uniform(uniform).to(tokens.device)
