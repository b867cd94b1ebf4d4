"""Verifying a tree of draft tokens in one target pass: which branch the target keeps, and what follows.

A tree is given by ``parents``: node i's parent node, or −1 for the pending token (the root, block
position 0); node i sits at block position i + 1 and every parent comes before its children. One
target pass over [root, nodes] with :func:`tree_attention` scores every node's successor at once.

Two rules, both lossless, both reducing to their chain versions when the tree is a chain:

- :func:`tree_match_verify` walks down from the root, taking at each node the child equal to the
  target's own choice there (greedy argmax, or the coupled draw keyed by depth), and emits that choice
  where no child matches. Every emitted token is the target's own choice at its position.
- :func:`tree_rejection_sample`: recursive rejection sampling over siblings (SpecInfer, SpecTr). At a
  node, children are tried in order; child c, proposed from p_c, is accepted with probability
  min(1, q(c)/p_c(c)); after a rejection q becomes the residual norm(max(0, q − p_c)) for the next
  sibling. Where every child is rejected the token is drawn from the last residual; at a leaf it is
  the bonus token from q. Valid when each child was proposed independently of its siblings' fate:
  deterministic children (top-k: p_c one-hot, so a rejected token is never tried twice) or
  independent draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from specdec.errors import InvalidArgumentError
from specdec.sampling.noise import Draws, GeneratorDraws, Stream
from specdec.sampling.rejection import acceptance_probability, residual_distribution


@dataclass
class TreeVerification:
    """Each row keeps the nodes ``path[row, :num_accepted[row]]`` (root to leaf order; −1 pads), then
    emits ``next_token`` (resampled or bonus), which the next step feeds."""

    num_accepted: torch.Tensor  # [B] long
    next_token: torch.Tensor  # [B] long
    path: torch.Tensor  # [B, depth] long node indices


def check_parents(parents: Sequence[int]) -> tuple[int, ...]:
    """``parents`` as a tuple, after checking every parent precedes its child (−1: the root)."""
    parents = tuple(int(p) for p in parents)
    for i, p in enumerate(parents):
        if not -1 <= p < i:
            raise InvalidArgumentError(f"node {i}'s parent must be -1 (the root) or an earlier node, got {p}")
    return parents


def depths(parents: Sequence[int]) -> list[int]:
    """Node depths below the root (the root's children have depth 1)."""
    out: list[int] = []
    for p in check_parents(parents):
        out.append(1 if p < 0 else out[p] + 1)
    return out


def children(parents: Sequence[int]) -> list[list[int]]:
    """Children of every block position (0 = root, i + 1 = node i), in node order."""
    out: list[list[int]] = [[] for _ in range(len(parents) + 1)]
    for i, p in enumerate(check_parents(parents)):
        out[p + 1].append(i)
    return out


def tree_attention(parents: Sequence[int]) -> torch.Tensor:
    """``[N+1, N+1]`` bool over [root, nodes]: each position sees itself, its ancestors and the root."""
    parents = check_parents(parents)
    mask = torch.eye(len(parents) + 1, dtype=torch.bool)
    mask[:, 0] = True
    for i, p in enumerate(parents):
        mask[i + 1] |= mask[p + 1]
    return mask


def chain_parents(length: int) -> tuple[int, ...]:
    """The tree of a linear draft: node i's parent is node i − 1."""
    return tuple(range(-1, length - 1))


# choose(block positions [n], depth, rows [n]) -> the target's token at those positions for those rows
TreeChoose = Callable[[torch.Tensor, int, torch.Tensor], torch.Tensor]


def tree_match_verify(
    tokens: torch.Tensor,
    parents: Sequence[int],
    choose: TreeChoose,
    depth_caps: torch.Tensor | None = None,
) -> TreeVerification:
    """Walk down from the root keeping the child equal to the target's choice (see the module doc).

    ``choose`` is called once per depth for the rows still walking, so randomness for depths no row
    reaches is never drawn. Siblings should differ (a repeated token can only be kept once). A row
    stops at depth ``depth_caps[b]`` (its draft cap or budget) and emits the target's choice there.
    """
    batch = tokens.shape[0]
    kids = children(parents)
    max_depth = max(depths(parents), default=0)
    path = torch.full((batch, max_depth), -1, dtype=torch.long)
    num_accepted = torch.zeros(batch, dtype=torch.long)
    next_token = torch.zeros(batch, dtype=torch.long)
    at = torch.zeros(batch, dtype=torch.long)  # block position each row has reached
    rows = torch.arange(batch)
    for depth in range(max_depth + 1):
        if len(rows) == 0:
            break
        choice = choose(at[rows], depth, rows).cpu().long()
        step = torch.full((len(rows),), -1, dtype=torch.long)
        for k, (row, pos) in enumerate(zip(rows.tolist(), at[rows].tolist(), strict=True)):
            for child in kids[pos]:
                if int(tokens[row, child]) == int(choice[k]):
                    step[k] = child
                    break
        stop = step < 0
        if depth_caps is not None:
            stop |= depth_caps[rows] <= depth
        num_accepted[rows[stop]], next_token[rows[stop]] = depth, choice[stop]
        rows = rows[~stop]
        if len(rows):
            path[rows, depth] = step[~stop]
            at[rows] = step[~stop] + 1
    return TreeVerification(num_accepted, next_token, path)


def tree_rejection_sample(
    tokens: torch.Tensor,
    parents: Sequence[int],
    p: torch.Tensor | None,
    q: torch.Tensor,
    draws: Draws | torch.Generator | None = None,
    depth_caps: torch.Tensor | None = None,
) -> TreeVerification:
    """Recursive rejection sampling down the tree (see the module doc); emitted tokens follow q exactly.
    A row stops at depth ``depth_caps[b]`` and draws its token there from q itself.

    ``tokens`` [B, N], ``p`` [B, N, V] the distribution each node's token was proposed from (None: every
    node deterministic, one-hot), ``q`` [B, N+1, V] the target at [root, nodes]. Randomness: at depth d
    (0 = the root's children) the accept tests of up to V siblings are the uniforms of (d, ``ACCEPT``),
    the resampled or bonus token is drawn with the Gumbel noise of (d, ``REDRAW``), as in
    :func:`~specdec.sampling.rejection.rejection_sample` for a chain.
    """
    batch, n = tokens.shape
    vocab = q.shape[-1]
    if tuple(q.shape[:2]) != (batch, n + 1) or (p is not None and tuple(p.shape) != (batch, n, vocab)):
        raise InvalidArgumentError(
            f"q must be [B, N+1, V] and p [B, N, V] for {n} nodes, got q {tuple(q.shape)}"
            + ("" if p is None else f", p {tuple(p.shape)}")
        )
    if draws is None or isinstance(draws, torch.Generator):
        draws = GeneratorDraws(draws)
    kids = children(parents)
    widest = max((len(k) for k in kids), default=0)
    max_depth = max(depths(parents), default=0)
    q64 = q.to(torch.float64)
    path = torch.full((batch, max_depth), -1, dtype=torch.long)
    num_accepted = torch.zeros(batch, dtype=torch.long)
    next_token = torch.zeros(batch, dtype=torch.long)
    for row in range(batch):
        pos, depth = 0, 0
        while True:
            target = q64[row, pos]
            kept = None
            if kids[pos] and (depth_caps is None or depth < int(depth_caps[row])):
                uniforms = draws.uniforms(depth, widest, torch.tensor([row]), Stream.ACCEPT)[0]
                for k, child in enumerate(kids[pos]):
                    token = int(tokens[row, child])
                    proposal = _proposal(p, row, child, token, vocab)
                    if uniforms[k] < acceptance_probability(proposal[token], target[token]):
                        kept = child
                        break
                    target = residual_distribution(proposal, target)
            if kept is None:
                drawn = draws.sample(target[None], depth, torch.tensor([row]), Stream.REDRAW)[0]
                num_accepted[row], next_token[row] = depth, drawn
                break
            path[row, depth] = kept
            pos, depth = kept + 1, depth + 1
    return TreeVerification(num_accepted, next_token, path)


def _proposal(p: torch.Tensor | None, row: int, node: int, token: int, vocab: int) -> torch.Tensor:
    if p is None:
        return torch.nn.functional.one_hot(torch.tensor(token), vocab).to(torch.float64)
    return p[row, node].to(torch.float64)
