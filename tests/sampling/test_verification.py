"""Verification by matching: the walk every greedy, coupled and BiLD rule runs."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.errors import InvalidArgumentError
from specdec.sampling import greedy_verify, gumbel_argmax, match_verify
from specdec.sampling.noise import gumbel_from_uniform


def test_greedy_verify_hand_built():
    draft = torch.tensor([[5, 6, 7], [5, 6, 7], [1, 2, 3], [9, 6, 7]])
    target = torch.tensor([[5, 6, 7, 8], [5, 4, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]])
    out = greedy_verify(draft, target)
    assert out.num_accepted.tolist() == [3, 1, 3, 0]
    assert out.next_token.tolist() == [8, 4, 4, 5]


@settings(max_examples=100, deadline=None)
@given(st.data(), st.integers(1, 5), st.integers(1, 6))
def test_greedy_verify_accepts_the_longest_matching_prefix(data, batch, gamma):
    tokens = st.lists(st.integers(0, 2), min_size=gamma + 1, max_size=gamma + 1)
    target = data.draw(st.lists(tokens, min_size=batch, max_size=batch))
    draft = data.draw(st.lists(tokens, min_size=batch, max_size=batch))
    out = greedy_verify(torch.tensor(draft)[:, :gamma], torch.tensor(target))
    for row, (d, tgt) in enumerate(zip(draft, target, strict=True)):
        n = next((i for i in range(gamma) if d[i] != tgt[i]), gamma)
        assert out.num_accepted[row].item() == n
        assert out.next_token[row].item() == tgt[n]


@pytest.mark.parametrize(
    ("draft_shape", "target_shape"), [((2,), (2, 1)), ((2, 0), (2, 1)), ((2, 3), (2, 3))]
)
def test_greedy_verify_rejects_mismatched_shapes(draft_shape, target_shape):
    with pytest.raises(InvalidArgumentError):
        greedy_verify(torch.zeros(draft_shape, dtype=torch.long), torch.zeros(target_shape, dtype=torch.long))


def test_greedy_verify_respects_draft_lengths():
    draft = torch.tensor([[5, 6, 7], [5, 6, 7]])
    target = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 8]])
    out = greedy_verify(draft, target, draft_lengths=torch.tensor([3, 1]))
    assert out.num_accepted.tolist() == [3, 1]
    assert out.next_token.tolist() == [8, 6]


def test_draft_lengths_are_validated():
    with pytest.raises(InvalidArgumentError, match="draft_lengths"):
        greedy_verify(torch.tensor([[1, 2]]), torch.tensor([[1, 2, 3]]), draft_lengths=torch.tensor([3]))


@settings(max_examples=100, deadline=None)
@given(st.data(), st.integers(1, 5), st.integers(0, 6))
def test_choices_are_asked_only_for_rows_still_accepting(data, batch, gamma):
    """Randomness for a position is drawn only if some row reaches it: ``choose`` sees exactly the rows
    whose draft matched so far and that proposed something there (or take their bonus there)."""
    tokens = st.lists(st.integers(0, 2), min_size=gamma + 1, max_size=gamma + 1)
    target = torch.tensor(data.draw(st.lists(tokens, min_size=batch, max_size=batch)))
    draft = torch.tensor(data.draw(st.lists(tokens, min_size=batch, max_size=batch)))[:, :gamma]
    lengths = torch.tensor(data.draw(st.lists(st.integers(0, gamma), min_size=batch, max_size=batch)))
    asked: list[tuple[int, list[int]]] = []

    def choose(i, rows):
        asked.append((i, rows.tolist()))
        return target[rows, i]

    out = match_verify(draft, choose, lengths)
    for i, rows in asked:
        for row in rows:
            assert i <= out.num_accepted[row]  # a row is asked up to (and including) where it stops
    for row in range(batch):
        n = int(out.num_accepted[row])
        assert [i for i, rows in asked if row in rows] == list(range(n + 1))  # once per position, in order
        assert n <= lengths[row] and (draft[row, :n] == target[row, :n]).all()
        assert n == lengths[row] or draft[row, n] != target[row, n]
        assert out.next_token[row] == target[row, n]


def test_keep_accepts_tokens_the_choice_disagrees_with():
    draft = torch.tensor([[1, 2, 3], [1, 2, 3]])
    choices = torch.tensor([[1, 9, 3, 4], [9, 9, 9, 9]])
    keep_row_0_position_1 = lambda i, rows, choice: (rows == 0) & (i == 1)  # noqa: E731
    out = match_verify(draft, lambda i, rows: choices[rows, i], keep=keep_row_0_position_1)
    assert out.num_accepted.tolist() == [3, 0]
    assert out.next_token.tolist() == [4, 9]


def test_an_empty_draft_is_a_plain_step():
    out = match_verify(torch.zeros(2, 0, dtype=torch.long), lambda i, rows: torch.tensor([7, 8])[rows])
    assert out.num_accepted.tolist() == [0, 0] and out.next_token.tolist() == [7, 8]


def coupled_agreement(p: torch.Tensor, q: torch.Tensor) -> float:
    """Exact P(argmax(log p + G) = argmax(log q + G)) for shared Gumbel noise G: as an exponential race,
    both pick i when every E_j exceeds E_i · max(p_j/p_i, q_j/q_i), which has probability
    1 / Σ_j max(p_j/p_i, q_j/q_i)."""
    both = (p > 0) & (q > 0)
    return sum(
        1.0 / torch.maximum(p / p[i], q / q[i]).sum().item() for i in both.nonzero().flatten().tolist()
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_coupled_acceptance_is_at_least_one_minus_tv_over_one_plus_tv(vocab, seed):
    """The price of seed-determined texts: a coupled draft token is accepted with probability at least
    (1 − TV)/(1 + TV) (rejection sampling: 1 − TV), checked exactly and against the library's own draw."""
    generator = torch.Generator().manual_seed(seed)
    p = torch.rand(vocab, dtype=torch.float64, generator=generator) ** 3
    q = torch.rand(vocab, dtype=torch.float64, generator=generator) ** 3
    p, q = p / p.sum(), q / q.sum()
    tv = 0.5 * (p - q).abs().sum().item()
    exact = coupled_agreement(p, q)
    assert (1 - tv) / (1 + tv) - 1e-12 <= exact <= 1 - tv + 1e-12
    rows = 20_000
    noise = gumbel_from_uniform(torch.rand(rows, vocab, dtype=torch.float64, generator=generator))
    agree = (
        gumbel_argmax(p.expand(rows, vocab), noise) == gumbel_argmax(q.expand(rows, vocab), noise)
    ).double()
    assert abs(agree.mean().item() - exact) < 5 * (exact * (1 - exact) / rows) ** 0.5 + 1e-3
