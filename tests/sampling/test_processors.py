"""Logits processing and sampling: hand-built cases whose answer is known exactly."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from specdec.sampling import (
    Entries,
    RowSampling,
    SamplingConfig,
    greedy_tokens,
    gumbel_argmax,
    logits_to_probs,
    processors,
    sampling_distribution,
)
from specdec.sampling.noise import gumbel_from_uniform

# Deliberately out of order, so a top-k / top-p that forgets to map back from sorted order fails.
PROBS = torch.tensor([0.125, 0.5, 0.125, 0.25], dtype=torch.float64)
LOGITS = PROBS.log()


def probs_for(**kwargs) -> torch.Tensor:
    return logits_to_probs(LOGITS, SamplingConfig(temperature=kwargs.pop("temperature", 1.0), **kwargs))


def expected(weights: list[float]) -> torch.Tensor:
    t = torch.tensor(weights, dtype=torch.float64)
    return t / t.sum()


def test_defaults_are_greedy_and_valid():
    assert SamplingConfig().greedy
    assert not SamplingConfig(temperature=0.7, top_k=5, top_p=0.9).greedy


# --- logits_to_probs -----------------------------------------------------------------------------------


def test_greedy_is_one_hot_of_argmax_for_any_leading_shape():
    logits = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(0))
    probs = logits_to_probs(logits, SamplingConfig())
    assert probs.dtype == torch.float64 and probs.shape == logits.shape
    assert torch.equal(probs, torch.nn.functional.one_hot(greedy_tokens(logits), 7).to(torch.float64))
    assert greedy_tokens(logits).dtype == torch.long


@pytest.mark.parametrize("temperature", [0.3, 1.0, 2.5])
def test_temperature_matches_float64_softmax(temperature):
    logits = torch.randn(4, 11, generator=torch.Generator().manual_seed(1))
    probs = logits_to_probs(logits, SamplingConfig(temperature=temperature))
    reference = torch.softmax(logits.double() / temperature, dim=-1)
    torch.testing.assert_close(probs, reference, rtol=0, atol=1e-15)


def test_softmax_is_computed_in_float64_even_from_low_precision_logits():
    # In float32 exp(-100) is a subnormal with ~3 significant digits; float64 keeps it exactly.
    probs = logits_to_probs(torch.tensor([0.0, -100.0], dtype=torch.float32), SamplingConfig(temperature=1.0))
    assert probs.dtype == torch.float64
    assert math.isclose(probs[1].item(), math.exp(-100) / (1 + math.exp(-100)), rel_tol=1e-12)


def test_top_k_keeps_exactly_k_and_renormalises():
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(2))
    probs = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=3))
    top = logits.topk(3, dim=-1).indices
    assert ((probs > 0).sum(dim=-1) == 3).all()
    torch.testing.assert_close(probs.gather(-1, top), torch.softmax(logits.double().gather(-1, top), -1))
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, dtype=torch.float64))


def test_top_k_with_ties_at_the_boundary_keeps_exactly_k():
    probs = logits_to_probs(torch.zeros(6), SamplingConfig(temperature=1.0, top_k=2))
    assert (probs > 0).sum() == 2
    assert torch.equal(probs[probs > 0], torch.full((2,), 0.5, dtype=torch.float64))


def test_top_k_at_least_vocab_is_a_no_op():
    assert torch.allclose(probs_for(top_k=4), PROBS, atol=1e-15)
    assert torch.allclose(probs_for(top_k=100), PROBS, atol=1e-15)


@pytest.mark.parametrize(
    ("top_p", "weights"),
    [
        (0.5, [0, 1, 0, 0]),  # the top token alone has mass 0.5: reaching top_p exactly stops there
        (0.51, [0, 0.5, 0, 0.25]),
        (0.75, [0, 0.5, 0, 0.25]),  # boundary: 0.5 + 0.25 == 0.75 exactly
        (0.76, [0.125, 0.5, 0, 0.25]),  # tie between tokens 0 and 2: one of them, topk/sort order
        (1e-9, [0, 1, 0, 0]),  # a tiny top_p still keeps one token
    ],
)
def test_top_p_keeps_the_minimal_nucleus(top_p, weights):
    probs = probs_for(top_p=top_p)
    if top_p == 0.76:  # either of the two 0.125 tokens may complete the nucleus
        assert (probs > 0).sum() == 3 and probs[1] > 0 and probs[3] > 0
        torch.testing.assert_close(probs.sort().values, expected(sorted(weights)), rtol=0, atol=1e-12)
    else:
        torch.testing.assert_close(probs, expected(weights), rtol=0, atol=1e-12)


def test_top_p_one_is_a_no_op():
    torch.testing.assert_close(probs_for(top_p=1.0), PROBS, rtol=0, atol=1e-15)


def test_temperature_is_applied_before_top_p():
    # At T=1 the 0.75-nucleus is {1, 3}; at T=100 the distribution is nearly uniform so it needs 3 tokens.
    assert (probs_for(top_p=0.75) > 0).sum() == 2
    hot = probs_for(temperature=100.0, top_p=0.75)
    assert (hot > 0).sum() == 3
    flat = torch.softmax(LOGITS / 100.0, dim=-1)
    kept = hot > 0
    torch.testing.assert_close(hot[kept], flat[kept] / flat[kept].sum(), rtol=0, atol=1e-12)


def test_top_k_is_applied_before_top_p():
    # top-k=2 renormalises {1, 3} to [2/3, 1/3]; the 0.6-nucleus of that is token 1 alone.
    # (top-p first would keep {1, 3}, since 0.5 < 0.6 on the full distribution.)
    torch.testing.assert_close(probs_for(top_k=2, top_p=0.6), expected([0, 1, 0, 0]), rtol=0, atol=1e-12)
    torch.testing.assert_close(probs_for(top_k=3, top_p=0.8), expected([0, 0.5, 0, 0.25]), rtol=0, atol=1e-12)


def test_filters_work_for_any_leading_shape():
    logits = torch.randn(2, 3, 9, generator=torch.Generator().manual_seed(3))
    config = SamplingConfig(temperature=0.8, top_k=5, top_p=0.7)
    batched = logits_to_probs(logits, config)
    assert batched.shape == logits.shape
    for i in range(2):
        for j in range(3):
            torch.testing.assert_close(batched[i, j], logits_to_probs(logits[i, j], config))


_SORT = torch.Tensor.sort


def _limit_sorting(monkeypatch, longest: int):
    """Sorts of more than ``longest`` values fail (the code sorts with ``Tensor.sort``; other ways fail)."""

    def limited(self, *args, **kwargs):
        if self.numel() > longest:
            raise AssertionError(f"a sort of {self.numel()} values")
        return _SORT(self, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("a sort of another kind")

    monkeypatch.setattr(torch.Tensor, "sort", limited)
    for owner, name in ((torch, "sort"), (torch, "argsort"), (torch.Tensor, "argsort")):
        monkeypatch.setattr(owner, name, refuse)


def test_top_p_sorts_only_its_candidates(monkeypatch):
    logits = 4 * torch.randn(2, 1000, generator=torch.Generator().manual_seed(4))
    _limit_sorting(monkeypatch, 0)
    logits_to_probs(logits, SamplingConfig(temperature=1.0))
    logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=50))
    logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=50, top_p=0.9))
    _limit_sorting(monkeypatch, 250)  # of 2 × 1000: each row's tokens within 7 nats of its top, ~100
    probs = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_p=0.9))
    assert 2 < int((probs > 0).sum()) < 250
    monkeypatch.setattr(processors, "NUCLEUS_BOUNDS", (math.inf,))
    with pytest.raises(AssertionError, match="sort of 2000"):  # every token a candidate (the guard works)
        logits_to_probs(logits, SamplingConfig(temperature=1.0, top_p=0.9))


# --- gumbel_argmax ----------------------------------------------------------------------------------------


def sample(probs: torch.Tensor, seed: int) -> torch.Tensor:
    """Gumbel-max draws with fresh noise per row from a seeded generator."""
    uniform = torch.rand(probs.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    return gumbel_argmax(probs, gumbel_from_uniform(uniform))


def test_sample_reaches_token_zero_when_it_has_all_the_mass():
    probs = torch.zeros(1000, 5, dtype=torch.float64)
    probs[:, 0] = 1.0
    assert (sample(probs, 0) == 0).all()


def test_sample_never_picks_zero_probability_tokens():
    probs = torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0], dtype=torch.float64).expand(20_000, 5)
    assert set(sample(probs, 0).unique().tolist()) == {1, 3}


def test_a_zero_uniform_is_not_minus_infinity():
    """U = 0 would give a −inf Gumbel and make a token with mass undrawable; it is clamped instead."""
    assert torch.isfinite(gumbel_from_uniform(torch.zeros(3, dtype=torch.float64))).all()


@pytest.mark.parametrize("weights", [[1.0] * 6, [0.05, 0.5, 0.2, 0.0, 0.25, 0.0]])
def test_sample_matches_chi_square_including_token_zero(weights):
    probs = expected(weights)
    n = 60_000
    counts = torch.bincount(sample(probs.expand(n, len(weights)), 0), minlength=len(weights))
    assert counts[0] > 0
    support = probs > 0
    assert (counts[~support] == 0).all()
    assert chisquare(counts[support].numpy(), (probs[support] * n).numpy()).pvalue > 1e-3


def test_sample_check_detects_a_biased_sampler():
    """Negative control for the chi-square above: plain argmax of noise without log p is not a draw from p."""
    probs = expected([0.05, 0.5, 0.2, 0.25])
    n = 60_000
    uniform = torch.rand((n, 4), dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    biased = (probs + gumbel_from_uniform(uniform)).argmax(-1)  # forgot the log
    counts = torch.bincount(biased, minlength=4)
    assert chisquare(counts.numpy(), (probs * n).numpy()).pvalue < 1e-6


def test_sample_is_a_function_of_the_noise():
    probs = torch.softmax(torch.randn(3, 500, 8, generator=torch.Generator().manual_seed(5)), dim=-1)
    a, b, c = sample(probs, 7), sample(probs, 7), sample(probs, 8)
    assert a.shape == (3, 500) and a.dtype == torch.long
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-4, 4), min_size=2, max_size=300),
    st.sampled_from([torch.bfloat16, torch.float16]),
)
def test_greedy_tokens_on_half_logits_pick_the_first_maximum(values, dtype):
    """The upcast that makes CPU argmax fast keeps the answer: the first of tied maxima, as the
    half-precision argmax itself (few distinct values, so ties are common)."""
    logits = (torch.tensor(values, dtype=torch.float32) / 4).to(dtype)[None]
    assert greedy_tokens(logits).item() == logits.argmax(-1).item() == values.index(max(values))


SPECIAL = [math.nan, math.inf, -math.inf]


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(4, 9), st.integers(1, 3))
def test_blockwise_greedy_tokens_equal_argmax(data, block, blocks, rows):
    """The block-max search picks argmax's own index: the first of tied maxima, the first NaN, index 0 of a
    row of -inf (few distinct values, so ties across blocks are common), on a non-contiguous slice too."""
    values = st.one_of(st.integers(-3, 3).map(float), st.sampled_from(SPECIAL))
    size = rows * 2 * blocks * block
    cells = data.draw(st.lists(values, min_size=size, max_size=size))
    logits = torch.tensor(cells).view(rows, 2, blocks * block)[:, 0]  # every other row of a wider tensor
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(processors, "VOCAB_BLOCK", block)
        assert processors._blockwise(logits)
        assert torch.equal(greedy_tokens(logits), logits.argmax(-1))


def test_blockwise_argmax_takes_the_first_of_maxima_tied_across_blocks():
    logits = torch.zeros(2, 16)
    logits[0, [13, 6]] = 5.0
    logits[1, [2, 9]] = math.nan
    assert processors.blockwise_argmax(logits, 4).tolist() == [6, 2] == logits.argmax(-1).tolist()


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(1, 4), st.integers(4, 9), st.integers(1, 3))
def test_top_tokens_are_the_k_largest(data, block, blocks, rows):
    """The blocks with the k largest maxima hold the k largest values: the same values as topk's, largest
    first, k distinct ids (tied values may come in another order)."""
    vocab = block * blocks
    k = data.draw(st.integers(1, vocab))
    cells = data.draw(st.lists(st.integers(-3, 3).map(float), min_size=rows * vocab, max_size=rows * vocab))
    logits = torch.tensor(cells).view(rows, vocab)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(processors, "VOCAB_BLOCK", block)
        ids = processors.top_tokens(logits, k)
    assert ids.shape == (rows, k)
    assert all(len(set(row)) == k for row in ids.tolist())
    assert torch.equal(logits.gather(-1, ids), logits.topk(k, dim=-1).values)


@settings(max_examples=200, deadline=None)
@given(
    logits=st.lists(
        st.lists(st.floats(-8, 8, allow_nan=False), min_size=12, max_size=12), min_size=1, max_size=6
    ),
    top_p=st.floats(0.05, 0.999),
    bounds=st.sampled_from([(0.0, math.inf), (0.5, 2.0, 6.0, math.inf), (1.0, math.inf), (math.inf,)]),
)
def test_top_p_from_the_top_candidates_equals_the_full_sort(logits, top_p, bounds):
    """Rows whose nucleus fits in the first bound's candidates settle there, the others at a wider bound
    (batches mix both): the result is the nucleus of the whole vocabulary either way (ties broken
    arbitrarily by both)."""
    row_logits = torch.tensor(logits, dtype=torch.float64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(processors, "NUCLEUS_BOUNDS", bounds)
        got = logits_to_probs(row_logits, SamplingConfig(temperature=1.0, top_p=top_p))
    probs = torch.softmax(row_logits, dim=-1)
    ordered, order = probs.sort(dim=-1, descending=True)
    reference = torch.zeros_like(probs).scatter_(-1, order, processors._nucleus(ordered, top_p))
    tied = (probs[:, :, None] == probs[:, None, :]).sum(-1) > 1  # a tie may swap which one is kept
    torch.testing.assert_close(got[~tied.any(-1)], reference[~tied.any(-1)], rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(got.sum(-1), torch.ones(len(logits), dtype=torch.float64))


def test_row_sampling_gives_each_row_its_own_distribution():
    logits = torch.randn(5, 30, generator=torch.Generator().manual_seed(3))
    configs = (
        SamplingConfig(),
        SamplingConfig(temperature=0.5, top_k=4),
        SamplingConfig(),
        SamplingConfig(temperature=1.0, top_p=0.8),
        SamplingConfig(temperature=0.5, top_k=4),
    )
    mixed = logits_to_probs(logits, RowSampling(configs))
    for row, config in enumerate(configs):
        assert torch.equal(mixed[row], logits_to_probs(logits[row : row + 1], config)[0])
    assert not RowSampling(configs).greedy and RowSampling(configs[:1]).greedy
    assert len(RowSampling(configs).groups()) == 3


CONFIGS = [
    SamplingConfig(),
    SamplingConfig(temperature=0.7),
    SamplingConfig(temperature=0.7, top_k=5),
    SamplingConfig(temperature=1.3, top_p=0.8),
    SamplingConfig(temperature=0.9, top_k=8, top_p=0.6),
    RowSampling((SamplingConfig(temperature=0.9, top_p=0.7),) * 4),
    RowSampling((SamplingConfig(temperature=0.9, top_p=0.7), SamplingConfig()) * 2),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_sampling_distribution_is_logits_to_probs_in_entries_when_truncated(config):
    logits = 3 * torch.randn(4, 40, generator=torch.Generator().manual_seed(9))
    dist = sampling_distribution(logits, config)
    one = config.groups()[0][0] if isinstance(config, RowSampling) and len(config.groups()) == 1 else config
    truncated = isinstance(one, SamplingConfig) and not one.greedy and (one.top_k > 0 or one.top_p < 1)
    assert isinstance(dist, Entries) == truncated
    dense = dist.dense() if isinstance(dist, Entries) else dist
    assert torch.equal(dense, logits_to_probs(logits, config))
