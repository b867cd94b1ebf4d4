"""What a model call costs, learnt from the calls timed: the curves that
:class:`~specdec.decoders.gamma.AdaptiveGamma` prices verify blocks and drafting with, and the batch-size
buckets it keeps the share of steps that drafted in."""

from __future__ import annotations

import math

# Cost elasticity (d log T / d log n between the two widest calls) from which wider calls cost their size.
PROPORTIONAL = 0.75


def size_bin(tokens: int) -> int:
    """Half-octave bins of a target call's size (tokens it computes, every row's block together)."""
    return round(2 * math.log2(max(1, tokens)))


class CallCosts:
    """T(n): how long a target call computing ``n`` tokens takes, from the calls seen.

    A call's cost is a function of the tokens it computes far more than of how they are split into rows
    and block widths: on one row a block of 5 costs about a one-token step (the weights are read once
    either way), at 16 rows each extra block column costs about a step of its own (the arithmetic is the
    limit). Keeping one curve over n serves every batch size and γ at once. Decayed means per half-octave
    bin of n, linear between measured bins and never below the smallest call measured; outside them,
    optimistic — proportional to n below the smallest (cost per token never falls as calls shrink),
    and above the largest flat up to twice its size, proportional to n beyond (proportional at once where
    the widest calls already cost their size) — so a size one doubling past what was measured looks worth
    a try, is tried once and is then known, and exploration widens a block by doublings rather than
    jumping to the widest.

    Sizes not timed for a while are forgotten (their weight ages by ``age`` per call timed, and goes
    below ``forget``): a call's cost drifts as the rows' contexts grow (attention reads them all), and a
    wide block timed at the start, over short prompts, would otherwise keep looking cheap for good.
    """

    def __init__(self, decay: float, age: float = 0.98, forget: float = 0.1, flat_above: bool = False):
        self.decay, self.age, self.forget = decay, age, forget
        # flat past the widest call measured, however far: for a curve only the steps that draft feed
        # (drafting at many rows is never tried if priced by size from one row, and so never measured)
        self.flat_above = flat_above
        self._bins: dict[int, list[float]] = {}  # bin -> decayed [Σw, Σn, Σt]
        # the curve's points, sorted, until the next call is added: the γ policy prices ~25 block sizes
        # per step from one curve, and re-sorting it for each was most of its per-step time
        self._points: list[tuple[float, float]] | None = None

    def add(self, tokens: int, seconds: float) -> None:
        self._points = None
        for key, sums in list(self._bins.items()):
            sums[:] = [self.age * v for v in sums]
            if sums[0] < self.forget:
                del self._bins[key]
        sums = self._bins.setdefault(size_bin(tokens), [0.0, 0.0, 0.0])
        for i, value in enumerate((1.0, tokens, seconds)):
            sums[i] = self.decay * sums[i] + value

    def __call__(self, tokens: int) -> float | None:
        """Estimated T(tokens), None before any call was timed."""
        if self._points is None:
            self._points = sorted((n / w, t / w) for w, n, t in self._bins.values())
        points = self._points
        if not points:
            return None
        below = [p for p in points if p[0] <= tokens]
        above = [p for p in points if p[0] > tokens]
        if not below:
            n, t = points[0]
            return t * tokens / n
        if not above:
            n1, t1 = points[-1]
            if self.flat_above:
                return t1
            reach = 2 * n1 if _below_proportional(points) else n1
            estimate = t1 * max(1.0, tokens / reach)
        else:
            (n0, t0), (n1, t1) = below[-1], above[0]
            estimate = t0 + (t1 - t0) * (tokens - n0) / (n1 - n0)
        # Never cheaper than the smallest call measured: a call over more tokens does at least the work
        # of a narrower one's weight reads, so no noise may price a block under a one-row plain step
        # (at more rows, AdaptiveGamma.rate keeps a block at least at that many rows' plain step). Between
        # wider sizes the curve may dip: on the reference CPU, with transformers' attention, a 2-token
        # block cost 17-21 % over a step and a 5-token one 4-8 %, and a rule that no wider call looks
        # cheaper than any narrower one priced every block at the 2-token cost.
        return max(estimate, points[0][1])


def _below_proportional(points: list[tuple[float, float]]) -> bool:
    """Whether the two widest calls measured cost less than proportionally to their size (so the next
    doubling is priced flat: optimistic, tried once, then known). Where the arithmetic is the limit
    (many rows: doubling the call nearly doubled its cost) wider calls are priced by size. A slope taken
    from the two widest points instead would, on the reference CPU with transformers' attention, carry
    the 2-token block's bump (+20 % over a step, where a 4-token block cost +7 %) onward and price
    every wider block out of reach, so it would never be measured."""
    if len(points) < 2:
        return True
    (n0, t0), (n1, t1) = points[-2:]
    return math.log(max(t1, 1e-12) / max(t0, 1e-12)) < PROPORTIONAL * math.log(n1 / n0)


def batch_bucket(rows: int) -> int:
    """Batch sizes that share a drafting cost estimate: 1, 2-3, 4-7, 8-15, ..."""
    return max(1, rows).bit_length() - 1


def nearest_bucket(table: dict[int, list[float]], rows: int) -> list[float]:
    """The sums a per-bucket table holds for ``rows`` rows' bucket, or the nearest bucket measured (the
    smaller on a tie)."""
    bucket = batch_bucket(rows)
    return table[min(table, key=lambda b: (abs(b - bucket), b))]
