"""When a top-k tree's siblings are worth their verify positions.

A chain-first tree (:attr:`~specdec.drafters.Draft.chain_first`: the drafter's chain, and beside each chain
node its next k − 1 likeliest tokens as leaves) brings what its chain brings, plus one token wherever the
chain is rejected at a depth whose siblings hold the target's token there (a *rescue*: the sibling is kept,
then the target's next token). It costs k times the chain's verify positions: about nothing on one row of a
CPU, a block column per row at many rows. Whether a step verifies the whole tree or its chain alone, it
tells both things the choice needs: the depth where each row's chain was rejected, and whether the target's
token there was a sibling. Greedy decoding and the coupled rule emit the target's own choice at that
position whatever was drafted, so a lone chain's next token is the token the tree's walk would have
matched; under the rejection rule it is a resample, and the count an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdec.decoders.acceptance import SHRINK
from specdec.drafters import Draft
from specdec.drafters.model import chain_kept
from specdec.sampling import TreeVerification, Verification

# The rescue rate a depth is assumed to have before any row was rejected there: what a top-2 tree of the
# EAGLE-3 head measured on Spec-Bench (1.99 against 1.87 tokens per target call for its chain at γ ~2.3,
# 2026-11-27 runs), so a tree is tried where its block is cheap and then priced on what it does.
RESCUE_PRIOR = 0.2


@dataclass
class ChainOutcome:
    """Per row: the chain nodes kept, and (where the step knew the chain-first tree's siblings) whether
    the chain was rejected at a depth whose siblings held the target's token."""

    kept: list[int]
    rescued: list[bool] | None = None


def chain_outcome(
    tree: Draft | None, draft: Draft, result: Verification | TreeVerification, depths: list[int]
) -> ChainOutcome:
    """What the chain of ``tree`` (the chain-first tree the drafter proposed; None: no such tree) did in a
    step that verified ``draft`` (that tree, or its chain alone); ``depths``: the chain nodes each row
    could keep (its usable length)."""
    accepted = result.num_accepted.tolist()
    if tree is None:
        return ChainOutcome(accepted)
    if isinstance(result, TreeVerification):  # the whole tree: a kept sibling ends its path
        chain = tree.chain_depth
        kept = [chain_kept(result.path[row, :n].tolist(), chain) for row, n in enumerate(accepted)]
        return ChainOutcome(kept, [n > k for n, k in zip(accepted, kept, strict=True)])
    rescued = []
    for row, k in enumerate(accepted):  # the chain alone: was the target's token a sibling at the miss?
        missed = k < depths[row]
        rescued.append(missed and int(result.next_token[row]) in tree.sibling_tokens(k)[row].tolist())
    return ChainOutcome(accepted, rescued)


class Rescues:
    """Decayed per depth: rows whose chain was rejected there, and of them the rows a sibling rescued."""

    def __init__(self, max_gamma: int, decay: float):
        self.decay = decay
        self._sums = [[0.0, 0.0] for _ in range(max_gamma)]  # depth k + 1 -> [Σ missed, Σ rescued]
        self._rates: list[float] | None = None  # until the next count

    def count(self, kept: list[int], depths: list[int], saved: list[bool], per_row: int) -> None:
        """Age every depth's counts, then count the rows whose chain (``kept`` nodes of ``depths``) missed
        within their reach, and of them the ones a sibling ``saved``."""
        self._rates = None
        missed, rescued = [0] * len(self._sums), [0] * len(self._sums)
        for kept_row, depth, saved_row in zip(kept, depths, saved, strict=True):
            if kept_row < min(depth, len(self._sums)):
                missed[kept_row] += 1
                rescued[kept_row] += saved_row
        for sums, m, r in zip(self._sums, missed, rescued, strict=True):
            sums[0] = self.decay * sums[0] + m / per_row
            sums[1] = self.decay * sums[1] + r / per_row

    def rates(self) -> list[float]:
        """r_k for depths k = 1 … max_gamma: the share of rows missed at depth k that a sibling rescued,
        shrunk towards r_(k−1) (r_1 towards :data:`RESCUE_PRIOR`) by :data:`SHRINK` rows' worth; the same
        list until the next :meth:`count`, not to be changed by the caller."""
        if self._rates is None:
            self._rates, previous = [], RESCUE_PRIOR
            for missed, rescued in self._sums:
                previous = (rescued + SHRINK * previous) / (missed + SHRINK)
                self._rates.append(previous)
        return self._rates
