"""Logits processing and sampling: hand-built cases whose answer is known exactly."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import chisquare

from specdec.errors import InvalidArgumentError
from specdec.sampling import SamplingConfig, greedy_tokens, logits_to_probs, sample

# Deliberately out of order, so a top-k / top-p that forgets to map back from sorted order fails.
PROBS = torch.tensor([0.125, 0.5, 0.125, 0.25], dtype=torch.float64)
LOGITS = PROBS.log()


def probs_for(**kwargs) -> torch.Tensor:
    return logits_to_probs(LOGITS, SamplingConfig(temperature=kwargs.pop("temperature", 1.0), **kwargs))


def expected(weights: list[float]) -> torch.Tensor:
    t = torch.tensor(weights, dtype=torch.float64)
    return t / t.sum()


# --- config validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "value", "valid_range"),
    [
        ({"temperature": -0.1}, "-0.1", ">= 0"),
        ({"temperature": float("nan")}, "nan", ">= 0"),
        ({"temperature": float("inf")}, "inf", ">= 0"),
        ({"temperature": "1"}, "'1'", ">= 0"),
        ({"top_p": 0.0}, "0.0", "(0, 1]"),
        ({"top_p": 1.5}, "1.5", "(0, 1]"),
        ({"top_p": float("nan")}, "nan", "(0, 1]"),
        ({"top_k": -1}, "-1", ">= 0"),
        ({"top_k": 2.5}, "2.5", ">= 0"),
    ],
)
def test_invalid_config_names_parameter_value_and_range(kwargs, value, valid_range):
    (name,) = kwargs
    with pytest.raises(InvalidArgumentError, match=name) as excinfo:
        SamplingConfig(**kwargs)
    assert value in str(excinfo.value) and valid_range in str(excinfo.value)


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


def _forbid_sorting(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("full-vocabulary sort")

    monkeypatch.setattr(torch, "sort", refuse)
    monkeypatch.setattr(torch, "argsort", refuse)
    monkeypatch.setattr(torch.Tensor, "sort", refuse)
    monkeypatch.setattr(torch.Tensor, "argsort", refuse)


def test_no_sort_without_top_p_or_with_top_k(monkeypatch):
    logits = torch.randn(2, 1000, generator=torch.Generator().manual_seed(4))
    _forbid_sorting(monkeypatch)
    logits_to_probs(logits, SamplingConfig(temperature=1.0))
    logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=50))
    logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=50, top_p=0.9))
    with pytest.raises(AssertionError, match="sort"):  # the guard itself works
        logits_to_probs(logits, SamplingConfig(temperature=1.0, top_p=0.9))


# --- sample -----------------------------------------------------------------------------------------------


def test_sample_reaches_token_zero_when_it_has_all_the_mass():
    probs = torch.zeros(1000, 5, dtype=torch.float64)
    probs[:, 0] = 1.0
    assert (sample(probs, torch.Generator().manual_seed(0)) == 0).all()


def test_sample_never_picks_zero_probability_tokens():
    probs = torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0], dtype=torch.float64).expand(20_000, 5)
    tokens = sample(probs, torch.Generator().manual_seed(0))
    assert set(tokens.unique().tolist()) == {1, 3}


def test_sample_uniform_matches_chi_square_including_token_zero():
    vocab, n = 6, 60_000
    uniform = torch.full((n, vocab), 1.0 / vocab, dtype=torch.float64)
    tokens = sample(uniform, torch.Generator().manual_seed(0))
    counts = torch.bincount(tokens, minlength=vocab)
    assert counts[0] > 0
    assert chisquare(counts.numpy(), [n / vocab] * vocab).pvalue > 1e-3


def test_sample_is_reproducible_per_generator_seed():
    probs = torch.softmax(torch.randn(3, 500, 8, generator=torch.Generator().manual_seed(5)), dim=-1)
    a = sample(probs, torch.Generator().manual_seed(7))
    b = sample(probs, torch.Generator().manual_seed(7))
    c = sample(probs, torch.Generator().manual_seed(8))
    assert a.shape == (3, 500) and a.dtype == torch.long
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_sample_draws_fresh_values_from_one_generator():
    probs = torch.full((1000, 10), 0.1, dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    assert not torch.equal(sample(probs, generator), sample(probs, generator))
