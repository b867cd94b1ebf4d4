"""Keyed randomness: a draw depends on (row key, position, stream) only, never on who asks or when."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kstest

from specdec.sampling import KeyedDraws, Stream, row_keys
from specdec.sampling.noise import GeneratorDraws, mix

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
