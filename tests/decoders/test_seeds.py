"""Same seed ⇒ same text: whatever the γ policy, the timings, the drafter or the batch composition.

Every random number is keyed by (the row's seed and sample index, the token's position, a stream),
so nothing about the schedule can change which numbers decide a token (specdec.sampling.noise).
"""

import random

import pytest
from decoding_cases import PROMPTS

from specdec.decoders import BiLD, GammaPolicy, SpeculativeSampling
from specdec.errors import InvalidArgumentError

SAMPLING = dict(temperature=1.0, top_k=40, max_new_tokens=20)


class RandomGamma(GammaPolicy):
    """A γ schedule as erratic as timing feedback can make one: a fresh random γ every step, plain
    steps (γ = 0, as the adaptive policy takes where drafting does not pay) included."""

    max_gamma = 9

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def next_gamma(self, batch_size: int = 1) -> int:
        return self.rng.randint(0, self.max_gamma)


def test_same_seed_same_text_under_any_gamma_schedule(cached):
    pipe = cached.pipe("truncated")
    schedules = [SpeculativeSampling(g) for g in (1, 2, 5, 9, "adaptive", "heuristic")]
    schedules += [SpeculativeSampling(RandomGamma(s)) for s in range(4)]
    texts = [pipe.generate(PROMPTS, method=m, seed=7, **SAMPLING).token_ids for m in schedules]
    assert all(t == texts[0] for t in texts)
    calls = {pipe.generate(PROMPTS, method=m, seed=7, **SAMPLING).stats.target_calls for m in schedules}
    assert len(calls) > 2  # the schedules really differed


def test_the_default_adaptive_policy_is_reproducible(cached):
    """The reported bug: the default γ policy follows wall-clock timings, which differ run to run."""
    pipe = cached.pipe("independent")
    runs = [pipe.generate(PROMPTS, seed=3, **SAMPLING).token_ids for _ in range(4)]
    assert all(r == runs[0] for r in runs)


def test_a_prompts_text_does_not_depend_on_the_rest_of_the_batch(cached, tok):
    pipe = cached.pipe("truncated")
    alone = pipe.generate(PROMPTS[1], seed=11, num_samples=2, **SAMPLING).token_ids
    other = "Once upon a time there was"
    for batch, index in (([PROMPTS[1], other], 0), ([other, PROMPTS[0], PROMPTS[1]], 2)):
        out = pipe.generate(batch, seed=11, num_samples=2, **SAMPLING).token_ids
        assert out[2 * index : 2 * index + 2] == alone
    assert alone[0] != alone[1]  # two samples of one prompt are two different draws


def test_per_prompt_seeds(cached):
    pipe = cached.pipe("prompt-lookup")
    both = pipe.generate(PROMPTS, seed=[5, 6], **SAMPLING).token_ids
    assert both[0] == pipe.generate(PROMPTS[0], seed=5, **SAMPLING).token_ids[0]
    assert both[1] == pipe.generate(PROMPTS[1], seed=6, **SAMPLING).token_ids[0]
    with pytest.raises(InvalidArgumentError, match="one per prompt"):
        pipe.generate(PROMPTS, seed=[5], **SAMPLING)


def test_different_seeds_and_no_seed_give_different_texts(cached):
    pipe = cached.pipe("truncated")
    seeded = {str(pipe.generate(PROMPTS, seed=s, **SAMPLING).token_ids) for s in range(4)}
    unseeded = {str(pipe.generate(PROMPTS, **SAMPLING).token_ids) for _ in range(4)}
    assert len(seeded) == 4 and len(unseeded) > 1


def test_rejection_rule_is_reproducible_for_a_fixed_schedule(cached):
    """Modified rejection sampling's text depends on the draft tokens: it is reproducible for the same
    drafter and the same fixed γ, in any batch."""
    pipe = cached.pipe("independent")
    method = SpeculativeSampling(3, "rejection")
    for seed in range(8):  # rows near their budget draft fewer tokens than the others (seeds 9, 16, 19 ...)
        first = pipe.generate(PROMPTS, method=method, seed=seed, **SAMPLING).token_ids
        assert pipe.generate(PROMPTS, method=method, seed=seed, **SAMPLING).token_ids == first
        other = pipe.generate([PROMPTS[1], "hello"], method=method, seed=seed, **SAMPLING).token_ids[0]
        assert other == first[1]


def test_sampled_bild_is_reproducible_across_batches(cached):
    pipe = cached.pipe("independent")
    method = BiLD(0.1, 2.0)
    alone = pipe.generate(PROMPTS[0], method=method, seed=4, **SAMPLING).token_ids[0]
    assert pipe.generate([PROMPTS[1], PROMPTS[0]], method=method, seed=4, **SAMPLING).token_ids[1] == alone
    assert pipe.generate(PROMPTS[0], method=method, seed=4, **SAMPLING).token_ids[0] == alone
