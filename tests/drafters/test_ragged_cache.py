"""The head's ragged cache: the mask a drafted tree depth attends with, on rows of different lengths."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

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


def reference_mask(lengths: list[int], counts: list[int], width: int) -> torch.Tensor:
    """Query i of row b sees the row's cached pairs, the block's real pairs up to itself, and itself."""
    used = max(lengths)
    mask = torch.zeros(len(lengths), 1, width, used + width, dtype=torch.bool)
    for b, (length, count) in enumerate(zip(lengths, counts, strict=True)):
        mask[b, 0, :, :length] = True
        for i in range(width):
            mask[b, 0, i, used + i] = True
            mask[b, 0, i, used : used + min(i + 1, count)] = True
    return mask


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 3), st.integers(1, 4))
def test_writes_and_block_masks_match_the_per_position_reference(data, batch, width):
    """Aligned rows writing whole blocks take one slice, others scatter position by position: the cache
    holds the same pairs either way; a block mask is None only where the reference sees everything."""
    lengths = data.draw(st.lists(st.integers(0, 5), min_size=batch, max_size=batch))
    counts = data.draw(st.lists(st.integers(0, width), min_size=batch, max_size=batch))
    cache = RaggedCache(batch, 2, 3, torch.float32, capacity=5)
    cache.keys.normal_(generator=torch.Generator().manual_seed(0))
    cache.values.copy_(-cache.keys)
    cache.lengths = torch.tensor(lengths)
    mask = cache.block_mask(torch.tensor(counts), width)
    expected_mask = reference_mask(lengths, counts, width)
    if mask is None:
        assert bool(expected_mask.all())
    else:
        assert torch.equal(mask, expected_mask)
    before = cache.keys.clone()
    block = torch.randn(batch, 2, width, 3, generator=torch.Generator().manual_seed(1))
    cache.write(block, -block, torch.tensor(counts))
    assert cache.lengths.tolist() == [n + c for n, c in zip(lengths, counts, strict=True)]
    for b, (length, count) in enumerate(zip(lengths, counts, strict=True)):
        assert torch.equal(cache.keys[b, :, :length], before[b, :, :length])
        assert torch.equal(cache.keys[b, :, length : length + count], block[b, :, :count])
        assert torch.equal(cache.values[b, :, length : length + count], -block[b, :, :count])


def test_one_row_writes_whole_blocks_and_drafts_unmasked():
    cache = RaggedCache(1, 1, 2, torch.float32)
    cache.write(torch.ones(1, 1, 3, 2), torch.ones(1, 1, 3, 2), torch.tensor([3]))
    assert cache.block_mask(torch.tensor([1]), 1) is None
    assert cache.block_mask(torch.tensor([2]), 2) is not None  # a block of two is causal
