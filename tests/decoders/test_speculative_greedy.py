"""Greedy speculative decoding must reproduce plain greedy decoding token for token (fp32)."""

import pytest

from conftest import DRAFTERS, PROMPTS
from specdec.pipeline import Pipeline


@pytest.mark.parametrize("drafter_name", list(DRAFTERS))
@pytest.mark.parametrize("gamma", [1, 3, 5, "adaptive", "heuristic"])
def test_greedy_speculative_equals_plain_greedy(target, tok, drafter_name, gamma):
    pipe = Pipeline(target, tok, drafter=DRAFTERS[drafter_name](target, tok))
    plain = pipe.generate(PROMPTS, max_new_tokens=24, speculative=False)
    spec = pipe.generate(PROMPTS, max_new_tokens=24, gamma=gamma)
    assert spec.token_ids == plain.token_ids
    assert spec.finish_reasons == plain.finish_reasons
    assert spec.stats.target_calls <= plain.stats.target_calls


def test_acceptance_matches_the_drafter(target, tok):
    """A draft identical to the target is always accepted; a random one almost never."""
    same = Pipeline(target, tok, drafter=DRAFTERS["self"](target, tok)).generate(
        PROMPTS[:1], max_new_tokens=20, gamma=4
    )
    assert same.stats.acceptance_rate == 1.0
    assert same.stats.tokens_per_target_call > 4.0
    other = Pipeline(target, tok, drafter=DRAFTERS["independent"](target, tok))
    assert other.generate(PROMPTS[:1], max_new_tokens=20, gamma=4).stats.acceptance_rate < 0.5


def test_several_samples_of_one_prompt_batch_like_single_runs(target, tok):
    pipe = Pipeline(target, tok, drafter=DRAFTERS["int8"](target, tok))
    single = pipe.generate(PROMPTS[1], max_new_tokens=16)
    many = pipe.generate(PROMPTS[1], max_new_tokens=16, num_samples=3)
    assert many.token_ids == single.token_ids * 3
