"""The head's ragged cache: the mask a drafted tree depth attends with, on rows of different lengths."""

import torch

from specdec.drafters.ragged_cache import RaggedCache


def test_a_tree_node_sees_its_rows_settled_pairs_its_drafted_ancestors_and_itself():
    cache = RaggedCache(2, 1, 4, torch.float32)
    cache.lengths = torch.tensor([3, 1])  # settled pairs
    settled = cache.lengths.clone()
    cache.write(torch.zeros(2, 1, 2, 4), torch.zeros(2, 1, 2, 4), torch.tensor([2, 2]))  # depth 1: two nodes
    ancestors = torch.tensor([[False, True], [True, False], [False, False]])  # three depth-2 nodes
    mask = cache.tree_mask(settled, ancestors)
    assert mask.shape == (2, 1, 3, 5 + 3)  # the longest row's 5 columns, then the block itself
    row0 = [
        [1, 1, 1, 0, 1, 1, 0, 0],  # settled 0-2, drafted node 1 (column 4), itself
        [1, 1, 1, 1, 0, 0, 1, 0],
        [1, 1, 1, 0, 0, 0, 0, 1],  # no drafted ancestor (a guard against an empty softmax aside)
    ]
    row1 = [  # settled 0, drafted columns 1-2; columns 3-4 are past this row's end
        [1, 0, 1, 0, 0, 1, 0, 0],
        [1, 1, 0, 0, 0, 0, 1, 0],
        [1, 0, 0, 0, 0, 0, 0, 1],
    ]
    assert mask[0, 0].int().tolist() == row0
    assert mask[1, 0].int().tolist() == row1


def test_the_first_depth_sees_only_the_settled_pairs_and_itself():
    cache = RaggedCache(2, 1, 4, torch.float32)
    cache.lengths = torch.tensor([2, 0])
    mask = cache.tree_mask(cache.lengths.clone(), torch.zeros(2, 0, dtype=torch.bool))
    assert mask[:, 0].int().tolist() == [[[1, 1, 1, 0], [1, 1, 0, 1]], [[0, 0, 1, 0], [0, 0, 0, 1]]]
