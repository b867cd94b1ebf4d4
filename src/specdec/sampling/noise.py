"""Random draws addressed by (row seed, token position, stream): a seeded text never depends on the schedule.

A speculative decoder consumes randomness in an order set by γ, by timings (adaptive γ), by the
drafter and by the other rows of the batch. Drawing from one generator in that order makes the
same seed give different texts. Here every random number is a pure function of

- the row's key (derived from the caller's seed and the sample index, never from its batch slot),
- the output position of the token it helps decide, and
- a stream: ``DRAW`` (a position's first draw, the one plain decoding makes), ``ACCEPT`` (the accept
  test of modified rejection sampling) and ``REDRAW`` (a second draw after a rejection).

Draws for position t are therefore the same whichever step, block offset or batch slot asks for
them. The losslessness proofs still hold: the token emitted at position t is decided by draws at t
alone, and those are independent of every earlier position's draws, so they are independent of the
prefix they are applied to. A draft token guessed with position t's draws and then discarded does
not change the prefix, so reusing position t's draws when t is decided for real is exact.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import IntEnum

import torch

_MASK = (1 << 64) - 1
_TINY = torch.finfo(torch.float64).tiny


class Stream(IntEnum):
    DRAW = 0  # a position's first draw: plain decoding, the draft, the coupled target choice
    ACCEPT = 1  # accept tests of modified rejection sampling
    REDRAW = 2  # the resampled or bonus token of modified rejection sampling


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK
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


def gumbel_from_uniform(uniform: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel noise −log(−log U); U = 0 is mapped to the smallest positive double, not −inf."""
    return -torch.log(-torch.log(uniform.clamp(min=_TINY)))


class Draws(ABC):
    """Uniforms and Gumbel noise for the rows of one decoding step.

    ``rows`` are batch positions (default: every row), ``offsets`` the position of the decided token
    relative to each row's first new token of this step (an int for all rows, or one per row).
    """

    @abstractmethod
    def uniform(
        self, offsets: int | torch.Tensor, rows: torch.Tensor | None = None, stream: Stream = Stream.ACCEPT
    ) -> torch.Tensor:
        """``[n]`` float64 uniforms in [0, 1)."""

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
    def gumbel(
        self,
        offsets: int | torch.Tensor,
        vocab: int,
        rows: torch.Tensor | None = None,
        stream: Stream = Stream.DRAW,
    ) -> torch.Tensor:
        """``[n, vocab]`` float64 standard Gumbel noise."""


class KeyedDraws(Draws):
    """Draws keyed by (row key, output position, stream): the decoders' source of randomness.

    Args:
        keys: each batch row's key (see :func:`row_keys`).
        starts: each batch row's output position of the first token this step decides.
    """

    def __init__(self, keys: Sequence[int], starts: Sequence[int]):
        self.keys, self.starts = list(keys), list(starts)
        self._generator = torch.Generator()

    def _positions(self, offsets: int | torch.Tensor, rows: torch.Tensor | None) -> list[tuple[int, int]]:
        batch = list(range(len(self.keys))) if rows is None else rows.tolist()
        offs = [offsets] * len(batch) if isinstance(offsets, int) else offsets.tolist()
        return [(self.keys[b], self.starts[b] + o) for b, o in zip(batch, offs, strict=True)]

    def _rand(self, key: int, position: int, stream: Stream, size: int) -> torch.Tensor:
        self._generator.manual_seed(mix(key, position, int(stream)))
        return torch.rand(size, dtype=torch.float64, generator=self._generator)

    def uniform(self, offsets, rows=None, stream=Stream.ACCEPT):
        draws = [self._rand(k, p, stream, 1) for k, p in self._positions(offsets, rows)]
        return torch.cat(draws) if draws else torch.zeros(0, dtype=torch.float64)

    def uniforms(self, offsets, count, rows=None, stream=Stream.ACCEPT):
        draws = [self._rand(k, p, stream, count) for k, p in self._positions(offsets, rows)]
        return torch.stack(draws) if draws else torch.zeros(0, count, dtype=torch.float64)

    def gumbel(self, offsets, vocab, rows=None, stream=Stream.DRAW):
        draws = [self._rand(k, p, stream, vocab) for k, p in self._positions(offsets, rows)]
        uniform = torch.stack(draws) if draws else torch.zeros(0, vocab, dtype=torch.float64)
        return gumbel_from_uniform(uniform)


class GeneratorDraws(Draws):
    """Draws taken in call order from one generator: for vectorised use of the pure sampling functions
    (thousands of independent rows at once), where no schedule can reorder them."""

    def __init__(self, generator: torch.Generator | None = None):
        self.generator = generator

    def _count(self, offsets: int | torch.Tensor, rows: torch.Tensor | None) -> int:
        if rows is not None:
            return len(rows)
        if isinstance(offsets, torch.Tensor):
            return len(offsets)
        raise ValueError("GeneratorDraws needs rows or per-row offsets to know how many draws to make")

    def uniform(self, offsets, rows=None, stream=Stream.ACCEPT):
        return torch.rand(self._count(offsets, rows), dtype=torch.float64, generator=self.generator)

    def uniforms(self, offsets, count, rows=None, stream=Stream.ACCEPT):
        return torch.rand(self._count(offsets, rows), count, dtype=torch.float64, generator=self.generator)

    def gumbel(self, offsets, vocab, rows=None, stream=Stream.DRAW):
        size = (self._count(offsets, rows), vocab)
        return gumbel_from_uniform(torch.rand(size, dtype=torch.float64, generator=self.generator))
