"""Keyed randomness: a draw depends on (row key, position, stream) only, never on who asks or when."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare, kstest

from specdec.sampling import (
    Entries,
    KeyedDraws,
    SamplingConfig,
    Stream,
    gumbel_argmax,
    logits_to_probs,
    row_keys,
    sampling_distribution,
)
from specdec.sampling.noise import GeneratorDraws, _signed, _splitmix64, keyed_uniforms, mix

VOCAB = 17


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(0, 500), min_size=4, max_size=4),
    st.integers(0, 9),
    st.sampled_from(list(Stream)),
)
def test_a_draw_depends_on_key_position_and_stream_only(keys, starts, offset, stream):
    """Whatever batch slot a row sits in, and whatever step (start, offset) reaches a position, the
    numbers for that position are the same."""
    batch = KeyedDraws(keys, starts[: len(keys)])
    together = batch.gumbel(offset, VOCAB, stream=stream)
    uniforms = batch.uniform(offset, stream=stream)
    for slot, (key, start) in enumerate(zip(keys, starts, strict=False)):
        position = start + offset
        shifted = KeyedDraws([keys[-1], key], [0, position - 1])  # another slot, another step split
        assert torch.equal(shifted.gumbel(1, VOCAB, rows=torch.tensor([1]), stream=stream)[0], together[slot])
        assert torch.equal(
            shifted.uniform(torch.tensor([1]), rows=torch.tensor([1]), stream=stream),
            uniforms[slot : slot + 1],
        )


def test_keys_positions_and_streams_give_unrelated_draws():
    draws = [
        KeyedDraws([key], [position]).gumbel(0, VOCAB, stream=stream)[0]
        for key in (1, 2)
        for position in (0, 1)
        for stream in Stream
    ]
    assert len({tuple(d.tolist()) for d in draws}) == len(draws)
    stacked = torch.stack(draws)
    corr = torch.corrcoef(stacked)
    assert (corr - torch.eye(len(draws))).abs().max() < 0.9


def test_gumbel_and_uniform_laws():
    """Across keys and positions the draws are standard Gumbel and uniform (KS test at a fixed seed)."""
    draws = KeyedDraws(list(range(2000)), [3] * 2000)
    gumbel = draws.gumbel(0, 5).flatten().numpy()
    assert kstest(gumbel, "gumbel_r").pvalue > 1e-3
    uniform = draws.uniform(1).numpy()
    assert ((uniform >= 0) & (uniform < 1)).all() and kstest(uniform, "uniform").pvalue > 1e-3
    # negative control: the same statistic rejects shifted noise
    assert kstest(gumbel + 0.1, "gumbel_r").pvalue < 1e-6


def test_row_keys_ignore_the_prompts_place_in_the_batch():
    keys = row_keys([5, 9, 5], num_samples=2)
    assert keys[0:2] == keys[4:6] == [mix(5, 0), mix(5, 1)]
    assert len(set(keys[:4])) == 4


def test_mix_has_no_collisions_on_small_inputs():
    values = {
        mix(seed, sample, position) for seed in range(20) for sample in range(10) for position in range(50)
    }
    assert len(values) == 20 * 10 * 50


def test_generator_draws_follow_the_generator():
    a = GeneratorDraws(torch.Generator().manual_seed(3)).gumbel(torch.zeros(4, dtype=torch.long), VOCAB)
    b = GeneratorDraws(torch.Generator().manual_seed(3)).gumbel(torch.zeros(4, dtype=torch.long), VOCAB)
    assert torch.equal(a, b) and a.shape == (4, VOCAB) and np.isfinite(a.numpy()).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.lists(st.integers(0, 2**40), min_size=1, max_size=40))
def test_keyed_uniforms_are_splitmix64_computed_with_tensor_ops(key, counters):
    """The vectorised generator (int64 products wrapping modulo 2**64, logical shifts) gives the
    reference SplitMix64 numbers of the key, bit for bit, also on vectorised lengths."""
    counters = counters * (40 // len(counters) + 1)  # long enough for the SIMD paths
    got = keyed_uniforms(torch.tensor(_signed(key)), torch.tensor(counters))
    want = [(_splitmix64((key + c * 0x9E3779B97F4A7C15) & (2**64 - 1)) >> 11) * 2.0**-53 for c in counters]
    assert got.tolist() == want


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(2, 60),
    st.floats(0.0, 0.95),
    st.integers(0, 2**32),
    st.sampled_from([KeyedDraws, GeneratorDraws]),
)
def test_a_draw_from_a_sparse_distribution_is_the_full_vocabulary_draw(rows, vocab, zeros, seed, kind):
    """Noise only at the tokens a truncated distribution can pick picks what full-vocabulary noise
    picks: the same numbers at those tokens, the same first maximum."""
    g = torch.Generator().manual_seed(seed)
    probs = torch.rand(rows, vocab, dtype=torch.float64, generator=g)
    probs[torch.rand(rows, vocab, generator=g) < zeros] = 0
    probs[torch.arange(rows), torch.randint(vocab, (rows,), generator=g)] = 1.0  # one token at least
    probs /= probs.sum(-1, keepdim=True)
    if kind is KeyedDraws:
        draws, again = KeyedDraws(range(rows), [seed % 7] * rows), KeyedDraws(range(rows), [seed % 7] * rows)
    else:
        draws, again = GeneratorDraws(torch.Generator().manual_seed(seed)), None
    drawn = draws.sample(probs, 3, torch.arange(rows))
    assert bool((probs[torch.arange(rows), drawn] > 0).all())
    if again is not None:
        assert torch.equal(drawn, gumbel_argmax(probs, again.gumbel(3, vocab, torch.arange(rows))))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(2, 60),
    st.floats(0.2, 3.0),
    st.integers(0, 8),
    st.floats(0.05, 1.0),
    st.integers(0, 2**32),
)
def test_a_draw_from_entries_is_the_dense_draw(rows, vocab, temperature, top_k, top_p, seed):
    """A truncated distribution held by its entries (zero ones included: top-k then top-p) draws what
    its dense matrix draws with the same keys."""
    logits = 3 * torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed))
    config = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p)
    dist = sampling_distribution(logits, config)
    dense = logits_to_probs(logits, config)
    draws = KeyedDraws(range(rows), [seed % 7] * rows)
    assert torch.equal(draws.sample(dist, 2), draws.sample(dense, 2))
    if isinstance(dist, Entries):  # and the entries are that matrix
        assert torch.equal(dist.dense(), dense)


def test_gumbel_at_reads_the_full_noise_at_the_asked_tokens():
    draws = KeyedDraws([11, 12, 13], [0, 5, 9])
    full = draws.gumbel(2, 50, stream=Stream.REDRAW)
    row_index, tokens = torch.tensor([2, 0, 0, 1]), torch.tensor([49, 0, 7, 7])
    assert torch.equal(draws.gumbel_at(2, None, row_index, tokens, Stream.REDRAW), full[row_index, tokens])
    # negative control: another stream's numbers differ at the same entries
    other = draws.gumbel_at(2, None, row_index, tokens, Stream.DRAW)
    assert not torch.equal(other, full[row_index, tokens])


def test_sparse_draws_follow_the_distribution():
    """Over many keys, draws from a top-k-like distribution follow it (chi-square), and a shifted
    distribution is rejected by the same statistic (negative control)."""
    probs = torch.zeros(1, 1000, dtype=torch.float64)
    probs[0, [3, 500, 999]] = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    tokens = torch.cat([KeyedDraws([k], [0]).sample(probs, 0) for k in range(3000)])
    counts = torch.bincount(tokens, minlength=1000)[[3, 500, 999]].numpy()
    assert counts.sum() == 3000
    assert chisquare(counts, [1500, 900, 600]).pvalue > 1e-3
    assert chisquare(counts, [1200, 1200, 600]).pvalue < 1e-6


def test_selected_rows_draw_what_those_rows_draw_in_the_whole_batch():
    draws = KeyedDraws([11, 22, 33, 44], [0, 5, 2, 7])
    rows = torch.tensor([3, 1])
    part = draws.select(rows)
    assert torch.equal(part.uniforms(2, 3), draws.uniforms(2, 3, rows))
    assert torch.equal(part.gumbel(1, 17), draws.gumbel(1, 17, rows))
    assert torch.equal(part.gumbel(1, 17, torch.tensor([1])), draws.gumbel(1, 17, torch.tensor([1])))
    probs = torch.softmax(torch.randn(2, 50, dtype=torch.float64), -1)
    assert torch.equal(part.sample(probs, 4), draws.sample(probs, 4, rows))
    assert not torch.equal(part.uniforms(2, 3), draws.uniforms(2, 3, torch.tensor([1, 3])))  # order matters
