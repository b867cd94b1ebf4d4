"""Modified rejection sampling recovers q: exactly (enumeration), statistically (with negative controls),
and as properties over arbitrary p, q (hypothesis)."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

import specdec.sampling.rejection as rejection
from specdec.errors import InvalidArgumentError
from specdec.sampling import (
    GeneratorDraws,
    KeyedDraws,
    acceptance_probability,
    rejection_sample,
    residual_distribution,
)

F64 = torch.float64


def random_dist(
    rng: np.random.Generator, vocab: int, sparsity: float = 0.0, floor: float = 0.0
) -> torch.Tensor:
    """A random distribution; ``sparsity`` zeroes entries (p == 0 and q == 0 are the edge cases)."""
    weights = rng.dirichlet(np.ones(vocab)) * (1 - floor) + floor / vocab
    weights[rng.random(vocab) < sparsity] = 0.0
    if weights.sum() == 0:
        weights[rng.integers(vocab)] = 1.0
    return torch.tensor(weights / weights.sum(), dtype=F64)


def sample(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Draft tokens for the tests, drawn by torch itself (not by the code under test)."""
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])


# --- exact enumeration ----------------------------------------------------------------------------


def first_token_law(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """P(first emitted token = x), enumerating the draft token d ~ p: accept d, or reject and resample.

    Calls the library's acceptance and residual through their module, so a broken one is what this
    enumeration computes with (see the negative control below)."""
    accept = rejection.acceptance_probability(p, q)
    reject_mass = (p * (1 - accept)).sum(-1, keepdim=True)
    return p * accept + reject_mass * rejection.residual_distribution(p, q)


class ConditionalTables:
    """Random context-dependent p(x | context) and q(x | context), drawn on first use of a context.

    With ``deterministic_draft``, p is the one-hot of a deterministic proposal (an n-gram drafter).
    """

    def __init__(self, vocab: int, seed: int, deterministic_draft: bool = False):
        self.vocab, self.rng, self.deterministic = vocab, np.random.default_rng(seed), deterministic_draft
        self.tables: dict[tuple[str, tuple[int, ...]], torch.Tensor] = {}

    def _get(self, kind: str, context: tuple[int, ...]) -> torch.Tensor:
        if (kind, context) not in self.tables:
            if kind == "p" and self.deterministic:
                proposal = torch.tensor(int(self.rng.integers(self.vocab)))
                self.tables[kind, context] = torch.nn.functional.one_hot(proposal, self.vocab).to(F64)
            else:
                self.tables[kind, context] = random_dist(self.rng, self.vocab, sparsity=0.3)
        return self.tables[kind, context]

    def p(self, context: tuple[int, ...]) -> torch.Tensor:
        return self._get("p", context)

    def q(self, context: tuple[int, ...]) -> torch.Tensor:
        return self._get("q", context)


Law = dict[tuple[int, ...], float]


def round_law(tables: ConditionalTables, context: tuple[int, ...], gamma: int) -> Law:
    """Law of the tokens one draft → verify round emits: accepted prefix + resampled or bonus token."""
    law: Law = defaultdict(float)

    def walk(accepted: tuple[int, ...], prob: float) -> None:
        here = context + accepted
        q = tables.q(here)
        if len(accepted) == gamma:  # all accepted: bonus token from q after the last draft token
            for x, qx in enumerate(q.tolist()):
                law[(*accepted, x)] += prob * qx
            return
        p = tables.p(here)
        accept = rejection.acceptance_probability(p, q)
        reject_mass = float((p * (1 - accept)).sum())
        for x, (resampled, drafted_and_accepted) in enumerate(
            zip(rejection.residual_distribution(p, q).tolist(), (p * accept).tolist(), strict=True)
        ):
            law[(*accepted, x)] += prob * reject_mass * resampled
            if drafted_and_accepted > 0:
                walk((*accepted, x), prob * drafted_and_accepted)

    walk((), 1.0)
    return law


def emitted_law(tables: ConditionalTables, gamma: int, length: int, context: tuple[int, ...] = ()) -> Law:
    """Joint law of the first ``length`` emitted tokens, chaining rounds until enough tokens exist."""
    law: Law = defaultdict(float)
    for tokens, prob in round_law(tables, context, gamma).items():
        if len(tokens) >= length:
            law[tokens[:length]] += prob
        else:
            for rest, rest_prob in emitted_law(tables, gamma, length - len(tokens), context + tokens).items():
                law[tokens + rest] += prob * rest_prob
    return law


def target_law(tables: ConditionalTables, sequence: tuple[int, ...]) -> float:
    prob = 1.0
    for i, x in enumerate(sequence):
        prob *= tables.q(sequence[:i])[x].item()
    return prob


@pytest.mark.parametrize("seed", range(20))
def test_first_token_law_is_q_exactly(seed):
    rng = np.random.default_rng(seed)
    vocab = int(rng.integers(2, 7))
    p, q = random_dist(rng, vocab, sparsity=0.3), random_dist(rng, vocab, sparsity=0.3)
    torch.testing.assert_close(first_token_law(p, q), q, rtol=0, atol=1e-12)


@pytest.mark.parametrize("deterministic_draft", [False, True], ids=["sampled-draft", "one-hot-draft"])
@pytest.mark.parametrize(
    ("vocab", "gamma", "length"), [(3, 1, 2), (4, 1, 2), (3, 2, 2), (4, 2, 2), (3, 2, 3)]
)
@pytest.mark.parametrize("seed", range(3))
def test_joint_law_of_emitted_tokens_is_the_target_joint(seed, vocab, gamma, length, deterministic_draft):
    tables = ConditionalTables(vocab, seed, deterministic_draft)
    law = emitted_law(tables, gamma, length)
    for sequence in itertools.product(range(vocab), repeat=length):
        assert abs(law.get(sequence, 0.0) - target_law(tables, sequence)) < 1e-12, sequence
    assert abs(sum(law.values()) - 1) < 1e-12


@pytest.mark.parametrize(
    "wrong",
    [
        ("residual_distribution", lambda p, q: q),  # resample from q instead of the residual
        ("residual_distribution", lambda p, q: (q - p).abs() / (q - p).abs().sum(-1, keepdim=True)),
        ("acceptance_probability", lambda p, q: torch.ones_like(p)),  # accept every draft token
    ],
    ids=["residual-is-q", "residual-is-abs", "accept-all"],
)
def test_the_enumeration_detects_a_broken_sampler(monkeypatch, wrong):
    """Negative control: with one of the library's pieces replaced by a plausible wrong one, the same
    exact enumeration that passes above is off by far more than its 1e-12 tolerance."""
    monkeypatch.setattr(rejection, *wrong)
    tables = ConditionalTables(4, seed=0)
    law = emitted_law(tables, gamma=2, length=2)
    worst = max(
        abs(law.get(seq, 0.0) - target_law(tables, seq)) for seq in itertools.product(range(4), repeat=2)
    )
    assert worst > 1e-3


# --- hand-built cases -----------------------------------------------------------------------------


def t(rows: list) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


def test_draft_tokens_at_least_as_likely_under_q_are_always_accepted():
    p = t([[[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]]])
    q = t([[[0.6, 0.4, 0.0], [0.1, 0.9, 0.0], [0.0, 0.0, 1.0]]])
    for seed in range(20):
        out = rejection_sample(torch.tensor([[0, 1]]), p, q, torch.Generator().manual_seed(seed))
        assert out.num_accepted.tolist() == [2] and out.next_token.tolist() == [2]  # bonus from q_γ


def test_token_impossible_under_q_is_rejected_and_resampled_from_the_residual():
    p = t([[[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]])
    q = t([[[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]])
    # Position 0 has p == q (always accepted); token 0 at position 1 has q = 0; residual there = [0, 0, 1].
    for seed in range(20):
        out = rejection_sample(torch.tensor([[1, 0]]), p, q, torch.Generator().manual_seed(seed))
        assert out.num_accepted.tolist() == [1] and out.next_token.tolist() == [2]


def test_one_hot_draft_is_accepted_with_probability_q_of_the_proposal():
    q = t([0.1, 0.3, 0.6])
    p = t([0.0, 1.0, 0.0])
    assert acceptance_probability(p[1], q[1]).item() == pytest.approx(0.3, abs=1e-15)
    torch.testing.assert_close(residual_distribution(p, q), t([0.1, 0.0, 0.6]) / 0.7, rtol=0, atol=1e-15)
    torch.testing.assert_close(first_token_law(p, q), q, rtol=0, atol=1e-15)


def test_acceptance_is_defined_where_p_is_zero():
    out = acceptance_probability(t([0.0, 0.0, 0.5, 0.2]), t([0.0, 0.3, 0.25, 0.4]))
    assert out.tolist() == [1.0, 1.0, 0.5, 1.0]
    assert acceptance_probability(torch.tensor([0.5]), torch.tensor([0.25])).dtype == F64


def test_residual_falls_back_to_q_when_p_equals_q():
    q = t([[0.2, 0.8], [0.5, 0.5]])
    torch.testing.assert_close(residual_distribution(q, q), q, rtol=0, atol=0)
    assert residual_distribution(t([1.0, 0.0]), t([0.0, 1.0])).tolist() == [0.0, 1.0]


def test_rejection_sample_is_reproducible_per_seed():
    rng = np.random.default_rng(0)
    p = torch.stack([random_dist(rng, 6) for _ in range(64 * 3)]).reshape(64, 3, 6)
    q = torch.stack([random_dist(rng, 6) for _ in range(64 * 4)]).reshape(64, 4, 6)
    draft = sample(p, torch.Generator().manual_seed(0))
    runs = [rejection_sample(draft, p, q, torch.Generator().manual_seed(s)) for s in (1, 1, 2)]
    assert torch.equal(runs[0].num_accepted, runs[1].num_accepted)
    assert torch.equal(runs[0].next_token, runs[1].next_token)
    assert not torch.equal(torch.cat(list(vars(runs[0]).values())), torch.cat(list(vars(runs[2]).values())))
    assert runs[0].num_accepted.dtype == torch.long and runs[0].next_token.dtype == torch.long


# --- Monte Carlo through rejection_sample, with negative controls ---------------------------------

VOCAB, GAMMA, ROWS, SEED = 5, 3, 200_000, 1234


def position_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """Context-independent p_i, q_i per position, so the token emitted at position i has law q_i."""
    rng = np.random.default_rng(7)
    p = torch.stack([random_dist(rng, VOCAB, floor=0.3) for _ in range(GAMMA)])
    q = torch.stack([random_dist(rng, VOCAB, floor=0.3) for _ in range(GAMMA + 1)])
    return p, q


def simulate(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, rejection.Verification]:
    """One vectorised call on ROWS rows; drafts and verification use separate seeded generators."""
    p_rows, q_rows = p.expand(ROWS, *p.shape), q.expand(ROWS, *q.shape)
    draft = sample(p_rows, torch.Generator().manual_seed(SEED))
    return draft, rejection_sample(draft, p_rows, q_rows, torch.Generator().manual_seed(SEED + 1))


def emitted_at(draft: torch.Tensor, out: rejection.Verification, position: int) -> torch.Tensor:
    """The token emitted at ``position`` for the rows that reached it (accepted draft, resample or bonus)."""
    reached = out.num_accepted >= position
    tokens = draft[:, position] if position < draft.shape[1] else out.next_token
    tokens = torch.where(out.num_accepted > position, tokens, out.next_token)
    return tokens[reached]


def law_pvalue(tokens: torch.Tensor, probs: torch.Tensor) -> float:
    """Chi-square goodness of fit of sampled tokens against a distribution: the one statistical check."""
    counts = torch.bincount(tokens, minlength=probs.shape[-1]).numpy()
    return float(chisquare(counts, probs.numpy() * len(tokens)).pvalue)


@pytest.fixture(scope="module")
def correct_run():
    p, q = position_tables()
    return q, *simulate(p, q)


@pytest.mark.parametrize("position", range(GAMMA + 1))
def test_emitted_tokens_follow_q_at_every_position(correct_run, position):
    q, draft, out = correct_run
    tokens = emitted_at(draft, out, position)
    assert len(tokens) > 20_000  # enough rows reached the position (the bonus included) for the test to bite
    assert law_pvalue(tokens, q[position]) > 1e-3


def test_acceptance_rate_matches_theory(correct_run):
    q, _, out = correct_run
    p, _ = position_tables()
    expected = torch.minimum(p[0], q[0]).sum().item()  # P(accept) = Σ min(p, q) = 1 - TV(p, q)
    assert abs((out.num_accepted >= 1).double().mean().item() - expected) < 5e-3


def test_one_hot_draft_through_rejection_sample():
    rng = np.random.default_rng(3)
    q = torch.stack([random_dist(rng, VOCAB, floor=0.3) for _ in range(3)])
    p = torch.nn.functional.one_hot(torch.tensor([2, 0]), VOCAB).to(F64)  # an n-gram drafter proposing 2, 0
    draft, out = simulate(p, q)
    assert (draft == torch.tensor([2, 0])).all()
    for position in range(3):
        assert law_pvalue(emitted_at(draft, out, position), q[position]) > 1e-3


def _resample_from_q(monkeypatch):
    monkeypatch.setattr(rejection, "residual_distribution", lambda p, q: q)


def _draft_treated_as_one_hot(monkeypatch):
    monkeypatch.setattr(rejection, "acceptance_probability", lambda p_token, q_token: q_token)


def _reuse_accept_uniform(monkeypatch):
    """Pick the resampled token by inverse CDF with the first accept uniform (replayed from the same seed)."""
    replay = torch.Generator().manual_seed(SEED + 1)

    def draw_with_accept_uniform(self, probs: torch.Tensor, offsets, rows=None, stream=None) -> torch.Tensor:
        u = torch.rand(probs.shape[0], GAMMA, dtype=F64, generator=replay)[:, 0]
        cdf = probs.cumsum(-1)
        return torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1), right=True).squeeze(-1)

    monkeypatch.setattr(GeneratorDraws, "sample", draw_with_accept_uniform)


@pytest.mark.parametrize(
    "break_sampler", [_resample_from_q, _draft_treated_as_one_hot, _reuse_accept_uniform]
)
def test_statistical_check_rejects_wrong_samplers(monkeypatch, break_sampler):
    break_sampler(monkeypatch)
    p, q = position_tables()
    draft, out = simulate(p, q)
    assert law_pvalue(emitted_at(draft, out, 0), q[0]) < 1e-6


# --- property tests -------------------------------------------------------------------------------

weights = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def distribution_pairs(draw, min_vocab: int = 2, max_vocab: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    vocab = draw(st.integers(min_vocab, max_vocab))
    vectors = st.lists(weights, min_size=vocab, max_size=vocab).filter(lambda w: sum(w) > 0)
    p = t(draw(vectors))
    q = p.clone() if draw(st.booleans()) and draw(st.booleans()) else t(draw(vectors))
    return p / p.sum(), q / q.sum()


@settings(max_examples=100, deadline=None)
@given(st.lists(weights, min_size=1, max_size=10), st.lists(weights, min_size=1, max_size=10))
def test_acceptance_probability_is_in_unit_interval(p_values, q_values):
    n = min(len(p_values), len(q_values))
    accept = acceptance_probability(t(p_values[:n]), t(q_values[:n]))
    assert accept.dtype == F64 and ((accept >= 0) & (accept <= 1)).all()


@settings(max_examples=100, deadline=None)
@given(distribution_pairs())
def test_residual_is_a_distribution_supported_where_q_exceeds_p(pair):
    p, q = pair
    residual = residual_distribution(p, q)
    assert (residual >= 0).all()
    assert abs(residual.sum().item() - 1) < 1e-12
    if (q - p).clamp(min=0).sum() > 0:
        assert (residual[p >= q] == 0).all()
    else:
        assert torch.equal(residual, q)


@settings(max_examples=100, deadline=None)
@given(distribution_pairs())
def test_enumeration_identity_holds_for_arbitrary_p_q(pair):
    p, q = pair
    torch.testing.assert_close(first_token_law(p, q), q, rtol=0, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_identical_p_and_q_accept_every_draft(data, batch, gamma, seed):
    vocab = data.draw(st.integers(2, 6))
    q = torch.stack([data.draw(distribution_pairs(vocab, vocab))[0] for _ in range(batch * (gamma + 1))])
    q = q.reshape(batch, gamma + 1, vocab)
    rows = st.lists(st.integers(0, vocab - 1), min_size=gamma, max_size=gamma)
    draft = torch.tensor(data.draw(st.lists(rows, min_size=batch, max_size=batch)))
    out = rejection_sample(draft, q[:, :gamma], q, torch.Generator().manual_seed(seed))
    assert (out.num_accepted == gamma).all()
    assert (q[torch.arange(batch), gamma, out.next_token] > 0).all()  # the bonus comes from q_γ


# --- shape validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("draft_shape", "p_shape", "q_shape", "match"),
    [
        ((2,), (2, 1, 5), (2, 2, 5), "draft_tokens"),
        ((2, 0), (2, 0, 5), (2, 1, 5), "γ >= 1"),
        ((2, 3), (2, 2, 5), (2, 4, 5), "p must be"),
        ((2, 3), (3, 3, 5), (2, 4, 5), "p must be"),
        ((2, 3), (2, 3), (2, 4, 5), "p must be"),
        ((2, 3), (2, 3, 5), (2, 3, 5), "q must be"),  # q without the bonus position
        ((2, 3), (2, 3, 5), (2, 4, 6), "q must be"),  # vocabulary mismatch
        ((2, 3), (2, 3, 5), (1, 4, 5), "q must be"),
    ],
)
def test_rejection_sample_rejects_mismatched_shapes(draft_shape, p_shape, q_shape, match):
    with pytest.raises(InvalidArgumentError, match=match):
        rejection_sample(torch.zeros(draft_shape, dtype=torch.long), torch.rand(p_shape), torch.rand(q_shape))


def test_rejection_sample_rejects_float_draft_tokens():
    with pytest.raises(InvalidArgumentError, match="integer"):
        rejection_sample(torch.zeros(2, 3), torch.rand(2, 3, 5), torch.rand(2, 4, 5))


def test_short_drafts_take_their_bonus_at_their_own_length():
    """Rows proposing fewer than γ tokens: nothing past the length is accepted, and the token after
    an accepted short draft follows q at that position (checked by chi-square at a fixed seed)."""
    p, q = position_tables()
    p_rows, q_rows = p.expand(ROWS, *p.shape).clone(), q.expand(ROWS, *q.shape)
    draft = sample(p_rows, torch.Generator().manual_seed(SEED))
    lengths = torch.full((ROWS,), 1, dtype=torch.long)
    p_rows[:, 1:] = 0.0  # padding positions carry no draft distribution
    out = rejection_sample(
        draft, p_rows, q_rows, torch.Generator().manual_seed(SEED + 1), draft_lengths=lengths
    )
    assert int(out.num_accepted.max()) == 1
    bonus_rows = out.num_accepted == 1
    assert law_pvalue(out.next_token[bonus_rows], q[1]) > 1e-3
    assert law_pvalue(emitted_at(draft, out, 0), q[0]) > 1e-3
    empty = rejection_sample(
        draft, p_rows, q_rows, torch.Generator().manual_seed(1), torch.zeros(ROWS, dtype=torch.long)
    )
    assert int(empty.num_accepted.max()) == 0
    assert law_pvalue(empty.next_token, q[0]) > 1e-3


def test_a_row_that_drafted_nothing_takes_the_targets_own_draw_whatever_the_others_drafted():
    """A row with no draft token beside rows that drafted some decides its token exactly as a step
    with no draft at all (the DRAW stream, as plain decoding and the coupled rule draw it)."""
    vocab = 6
    q = torch.softmax(torch.randn(2, 3, vocab, generator=torch.Generator().manual_seed(4), dtype=F64), -1)
    p = torch.softmax(torch.randn(2, 2, vocab, generator=torch.Generator().manual_seed(5), dtype=F64), -1)
    for key in range(20):
        draws = KeyedDraws([key, key + 100], [3, 7])
        ragged = rejection_sample(
            torch.tensor([[1, 2], [3, 4]]), p, q, draws, draft_lengths=torch.tensor([2, 0])
        )
        alone = KeyedDraws([key + 100], [7]).sample(q[1, :1], 0)
        assert ragged.num_accepted[1] == 0 and ragged.next_token[1] == alone[0]
