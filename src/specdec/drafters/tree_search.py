"""A draft tree grown where the drafter is confident (EAGLE-2's dynamic tree), model-free.

A static top-k tree spends its nodes the same way at every step: the chain, and beside each chain
token its next likeliest siblings, which are leaves. When the drafter's first guess is sure its
siblings are wasted, and when the second guess is nearly as likely as the first, the second deserves
children of its own. Scoring each candidate by its path probability under the drafter (the product
of the draft probabilities from the root to it: the chance the target walks that far along it, for a
calibrated drafter) and keeping the best ``nodes`` of them spends the same verify block on the
tokens most likely to be accepted. A node's score never exceeds its parent's, so the best ``nodes``
always form a tree.

Growth is a beam: at each depth the ``width`` best candidates (the frontier) are run through the
drafter once, together, and each contributes its ``width`` likeliest children as candidates of the
next depth. A verify block has one shape for every row (:class:`~specdec.drafters.base.Draft`), so
rows share the tree's shape and each fills it with its own tokens: candidates are ranked by their
score summed over the rows (the expected number of rows that accept them), which for one row is
EAGLE-2's rule. Every node is a deterministic proposal (one-hot p), which every verify rule keeps
exact whatever the shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from specdec.sampling.tree import depths

#: ``expand(tokens [B, k], parent_slots) -> logits [B, k, V]``: run the drafter on the frontier's k
#: tokens, where frontier node i is the child of the previous frontier's node ``parent_slots[i]``
#: (None for the first frontier, the root's children)
Expand = Callable[[torch.Tensor, list[int] | None], torch.Tensor]


@dataclass
class DraftTree:
    tokens: torch.Tensor  # [B, N], nodes ordered by depth (a parent before its children)
    parents: tuple[int, ...]  # node i's parent node, -1 for the root (the pending token)
    scores: torch.Tensor  # [B, N] float: each node's path probability under the drafter


def grow_tree(first_logits: torch.Tensor, expand: Expand, depth: int, nodes: int, width: int) -> DraftTree:
    """The ``nodes`` best-scored candidates of a beam of ``width`` grown ``depth`` levels deep from the
    root's logits ``[B, V]`` (``depth`` − 1 calls of ``expand``)."""
    top = first_logits.float().softmax(-1).topk(width, dim=-1)
    columns, scores = [top.indices], [top.values]  # candidates' tokens / path probabilities, per level
    parents = [-1] * width  # per candidate (pool ids in order of creation, so a parent comes first)
    frontier = list(range(width))  # pool ids of the frontier
    frontier_tokens, frontier_scores, slots = top.indices, top.values, None
    for _ in range(1, depth):  # depths 2 … depth
        logits = expand(frontier_tokens, slots).float()
        children = logits.softmax(-1).topk(width, dim=-1)  # [B, k, width]
        batch = logits.shape[0]
        tokens = children.indices.reshape(batch, -1)
        path = (frontier_scores[:, :, None] * children.values).reshape(batch, -1)
        first = len(parents)
        parents += [frontier[i // width] for i in range(tokens.shape[1])]
        columns.append(tokens)
        scores.append(path)
        best = path.sum(0).topk(min(width, path.shape[1])).indices.tolist()
        slots = [i // width for i in best]
        frontier = [first + i for i in best]
        frontier_tokens, frontier_scores = tokens[:, best], path[:, best]
    return _best_nodes(torch.cat(columns, 1), torch.cat(scores, 1), parents, nodes)


def _best_nodes(tokens: torch.Tensor, scores: torch.Tensor, parents: list[int], nodes: int) -> DraftTree:
    """The ``nodes`` candidates of highest summed score, a parent before its children on ties (equal
    scores: a child of probability one), renumbered in depth order."""
    total, depth = scores.sum(0).tolist(), depths(parents)
    ranked = sorted(range(len(parents)), key=lambda i: (-total[i], depth[i], i))
    kept = sorted(ranked[:nodes], key=lambda i: (depth[i], -total[i], i))
    new = {old: j for j, old in enumerate(kept)}
    return DraftTree(
        tokens[:, kept], tuple(-1 if parents[i] < 0 else new[parents[i]] for i in kept), scores[:, kept]
    )
