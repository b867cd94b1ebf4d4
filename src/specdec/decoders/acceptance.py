"""How far drafts get accepted, per draft position: the evidence the adaptive γ policy
(:class:`~specdec.decoders.gamma.AdaptiveGamma`) prices a draft length with.

Acceptance is not a geometric run: a prompt lookup's copy, once its first token is right, goes on being
right (measured on the results page: 1.67 tokens per target call at α 0.21 and γ 3.1, where a geometric
run gives 1.26), and a trained drafter's easy spans do the same. Priced as geometric, long drafts look
worth less than they are and the policy drafts too little.
"""

from __future__ import annotations

# Rows' worth of evidence a draft position's estimate borrows from the position before it.
SHRINK = 2.0


class PositionAcceptance:
    """Decayed per draft position k + 1: the rows that reached it (kept every earlier one and were
    proposed a k + 1-th) and the rows that kept it."""

    def __init__(self, max_gamma: int, decay: float):
        self.decay = decay
        self.sums = [[0.0, 0.0] for _ in range(max_gamma)]  # position k + 1 -> [Σ reached, Σ kept]
        self._rates: tuple[float, list[float]] | None = None  # (pooled, rates) until the next count

    def count(self, accepted: list[int], proposed: list[int], per_row: int) -> None:
        """Age every position's counts, then count the rows that reached and kept each position."""
        self._rates = None
        longest = len(self.sums)
        reached, kept = [0] * (longest + 1), [0] * (longest + 1)  # rows whose run reached / kept exactly
        for accepted_row, offered in zip(accepted, proposed, strict=True):
            reached[min(offered, accepted_row + 1, longest)] += 1
            kept[min(accepted_row, longest)] += 1
        beyond_reached = beyond_kept = 0  # rows that reached / kept position k + 1 or further
        for k in reversed(range(longest)):
            beyond_reached, beyond_kept = beyond_reached + reached[k + 1], beyond_kept + kept[k + 1]
            sums = self.sums[k]
            sums[0] = self.decay * sums[0] + beyond_reached / per_row
            sums[1] = self.decay * sums[1] + beyond_kept / per_row

    def rates(self, pooled: float) -> list[float]:
        """α_k for positions k = 1 … max_gamma: the decayed share of the rows that reached position k
        that kept it, shrunk towards α_(k−1) (α_1 towards ``pooled``) by :data:`SHRINK` rows' worth, so a
        position seldom reached borrows its neighbour's estimate. The same list until the next
        :meth:`count` (the γ policy reads it for every γ it prices): not to be changed by the caller."""
        if self._rates is None or self._rates[0] != pooled:
            estimates, previous = [], pooled
            for reached, kept in self.sums:
                previous = (kept + SHRINK * previous) / (reached + SHRINK)
                estimates.append(previous)
            self._rates = pooled, estimates
        return self._rates[1]
