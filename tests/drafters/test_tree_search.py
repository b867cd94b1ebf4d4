"""The dynamic draft tree, model-free: a fake drafter whose next-token law depends on the last token only
(a Markov table per row) lets every node's path probability be recomputed by walking its ancestors,
and, where the beam keeps every candidate, the kept nodes be checked against all paths enumerated."""

import itertools
import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.drafters.tree_search import grow_tree
from tiny import tree_paths


def markov(batch: int, vocab: int, seed: int):
    """Root logits ``[B, V]`` and an ``expand`` whose logits for a node are its row's table row of the
    node's token, with the calls it received."""
    generator = torch.Generator().manual_seed(seed)
    first = 3 * torch.randn(batch, vocab, generator=generator)
    table = 3 * torch.randn(batch, vocab, vocab, generator=generator)
    calls = []

    def expand(tokens, slots):
        calls.append((tokens.clone(), slots))
        return table[torch.arange(batch)[:, None], tokens]

    return first, table, expand, calls


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 3),
    vocab=st.integers(3, 9),
    depth=st.integers(1, 4),
    nodes=st.integers(1, 12),
    width=st.integers(1, 4),
    seed=st.integers(0, 10**6),
)
def test_a_grown_tree_is_a_tree_whose_scores_are_its_path_probabilities(
    batch, vocab, depth, nodes, width, seed
):
    width = min(width, vocab)
    first, table, expand, calls = markov(batch, vocab, seed)
    tree = grow_tree(first, expand, depth, nodes, width)
    pool = width + (depth - 1) * width * width
    assert len(tree.parents) == tree.tokens.shape[1] == min(nodes, pool)
    assert len(calls) == depth - 1 and all(tokens.shape == (batch, width) for tokens, _ in calls)
    for node, parent in enumerate(tree.parents):
        assert -1 <= parent < node  # parents first: the order a verify block needs
    paths = tree_paths(tree.parents)
    assert all(len(path) <= depth for path in paths)
    for row in range(batch):
        for node, nodes in enumerate(paths):
            path = [int(tree.tokens[row, i]) for i in nodes]
            probability = first[row].softmax(-1)[path[0]]
            for before, token in itertools.pairwise(path):
                probability = probability * table[row, before].softmax(-1)[token]
            assert math.isclose(float(tree.scores[row, node]), float(probability), rel_tol=1e-5)
        for parent in set(tree.parents):  # siblings are distinct tokens
            kids = [int(tree.tokens[row, i]) for i, p in enumerate(tree.parents) if p == parent]
            assert len(kids) == len(set(kids))


@settings(max_examples=40, deadline=None)
@given(vocab=st.integers(2, 6), nodes=st.integers(1, 20), seed=st.integers(0, 10**6))
def test_with_a_full_beam_one_row_keeps_the_likeliest_paths_of_all(vocab, nodes, seed):
    """Two levels and a beam as wide as the vocabulary keep every path as a candidate: the tree must be
    the ``nodes`` most probable of all V + V² paths (EAGLE-2's rule for one row)."""
    first, table, expand, _ = markov(1, vocab, seed)
    tree = grow_tree(first, expand, 2, nodes, vocab)
    root = first[0].softmax(-1)
    every = {(a,): float(root[a]) for a in range(vocab)}
    every.update(
        {(a, b): float(root[a] * table[0, a].softmax(-1)[b]) for a in range(vocab) for b in range(vocab)}
    )
    kept = {tuple(int(tree.tokens[0, i]) for i in nodes) for nodes in tree_paths(tree.parents)}
    threshold = min(every[path] for path in kept)
    assert len(kept) == min(nodes, len(every))
    assert all(every[path] <= threshold * (1 + 1e-6) for path in every.keys() - kept)


def test_rows_share_the_shape_ranked_by_their_summed_probability():
    """Row 0 is sure of its first guess, row 1 torn between two: with one node per row budgeted beyond
    the first, the second depth-1 slot (row 1's need) outranks row 0's depth-2 guess only when summed."""
    vocab = 4
    first = torch.log(torch.tensor([[0.97, 0.015, 0.01, 0.005], [0.5, 0.48, 0.015, 0.005]]))
    table = torch.log(torch.full((2, vocab, vocab), 0.25))

    def expand(tokens, slots):
        return table[torch.arange(2)[:, None], tokens]

    tree = grow_tree(first, expand, 2, 2, 2)
    # slot scores summed: first guesses 1.47, second guesses 0.495, first guess's children 0.3675
    assert tree.parents == (-1, -1)
    assert tree.tokens.tolist() == [[0, 1], [0, 1]]
    alone = grow_tree(first[:1], lambda t, s: table[:1][torch.arange(1)[:, None], t], 2, 2, 2)
    assert alone.parents == (-1, 0)  # row 0 alone spends its second node deeper
