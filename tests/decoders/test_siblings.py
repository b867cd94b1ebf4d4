"""A chain-first tree's siblings, as the γ policy learns them: a step that verifies the chain alone tells
what the whole tree would have kept (the same chain, plus one sibling wherever the target's token at the
chain's miss was one), and the per-depth rescue rates shrink towards the depth before."""

import pytest
import torch

from specdec.decoders.acceptance import SHRINK
from specdec.decoders.siblings import RESCUE_PRIOR, ChainOutcome, Rescues, chain_outcome
from specdec.decoders.speculative import coupled_verify
from specdec.drafters import Draft
from specdec.drafters.model import with_siblings
from specdec.drafters.small_model import DraftRun
from specdec.sampling import SamplingConfig

VOCAB = 10


def one_hot_logits(tokens: torch.Tensor) -> torch.Tensor:
    """Target logits ``[B, n, V]`` whose greedy choice at each position is ``tokens[:, i]``."""
    return torch.nn.functional.one_hot(tokens, VOCAB).float() * 10.0


def tree_and_targets(seed: int, rows: int, gamma: int, width: int) -> tuple[Draft, torch.Tensor]:
    """A top-``width`` tree over a random greedy chain, and the target's token after each chain prefix
    (depth 0 … γ): the chain's token half the time, a sibling's a quarter, any token otherwise."""
    g = torch.Generator().manual_seed(seed)
    logits = [torch.randn(rows, VOCAB, generator=g) for _ in range(gamma)]
    chain = torch.stack([step.argmax(-1) for step in logits], dim=1)
    tree = with_siblings(DraftRun(Draft(chain), False, gamma, logits), width)
    targets = torch.randint(0, VOCAB, (rows, gamma + 1), generator=g)
    for d in range(gamma):
        pick = torch.rand(rows, generator=g)
        siblings = tree.sibling_tokens(d)
        targets[:, d] = torch.where(pick < 0.5, chain[:, d], targets[:, d])
        targets[:, d] = torch.where((pick >= 0.5) & (pick < 0.75), siblings[:, 0], targets[:, d])
    return tree, targets


@pytest.mark.parametrize("width", [2, 3])
def test_a_lone_chain_tells_what_its_tree_would_have_kept(width):
    greedy, rescues = SamplingConfig(), 0
    for seed in range(200):
        rows, gamma = 3, 1 + seed % 4
        tree, targets = tree_and_targets(seed, rows, gamma, width)
        # the tree's block: the pending token, then chain node d (whose children the target's token after
        # d + 1 chain tokens decides), then the siblings (leaves: whatever the target says after them)
        after_siblings = torch.randint(
            0, VOCAB, (rows, tree.gamma - gamma), generator=torch.Generator().manual_seed(seed)
        )
        tree_block = one_hot_logits(torch.cat([targets, after_siblings], dim=1))
        whole = coupled_verify(tree, tree_block, greedy, None)
        alone = coupled_verify(tree.chain(), one_hot_logits(targets), greedy, None)
        depths = [gamma] * rows
        from_tree = chain_outcome(tree, tree, whole, depths)
        from_chain = chain_outcome(tree, tree.chain(), alone, depths)
        assert from_tree == from_chain
        assert whole.num_accepted.tolist() == [
            k + r for k, r in zip(from_chain.kept, from_chain.rescued, strict=True)
        ]
        rescues += sum(from_chain.rescued)
    assert rescues > 50  # the siblings did rescue misses, so the equality above was tested


def test_a_chain_without_a_tree_keeps_its_count_and_knows_no_siblings():
    tokens = torch.tensor([[3, 4], [5, 6]])
    result = coupled_verify(
        Draft(tokens), one_hot_logits(torch.tensor([[3, 1, 2], [5, 6, 7]])), SamplingConfig(), None
    )
    assert chain_outcome(None, Draft(tokens), result, [2, 2]) == ChainOutcome([1, 2], None)


def test_rescue_rates_count_misses_within_reach_and_shrink_towards_the_depth_before():
    rescues = Rescues(max_gamma=3, decay=0.5)
    assert rescues.rates() == pytest.approx([RESCUE_PRIOR] * 3)
    # rows: missed at depth 1 and rescued, missed at depth 1, missed at depth 2 and rescued, kept all 3,
    # and one whose reach (1) ended before any miss
    rescues.count([0, 0, 1, 3, 1], [3, 3, 3, 3, 1], [True, False, True, False, False], per_row=1)
    first = (1 + SHRINK * RESCUE_PRIOR) / (2 + SHRINK)
    second = (1 + SHRINK * first) / (1 + SHRINK)
    assert rescues.rates() == pytest.approx([first, second, second])
    rescues.count([], [], [], per_row=1)  # a step with no row: every count halves
    halved = (0.5 + SHRINK * RESCUE_PRIOR) / (1 + SHRINK)
    assert rescues.rates()[0] == pytest.approx(halved)
