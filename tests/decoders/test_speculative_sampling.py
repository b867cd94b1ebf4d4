"""Sampled speculative decoding follows the target's distribution (chi-square at a fixed seed),
and a deliberately wrong verifier fails the same check."""

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

import specdec.decoders.speculative as speculative
from specdec.drafters import ModelDrafter
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, Verification, logits_to_probs
from tiny import make_llama

ROWS = 4000
SAMPLING = dict(temperature=1.5, top_k=12)


def law_pvalue(tokens: list[int], probs: torch.Tensor) -> float:
    """Chi-square of sampled tokens against probs, pooling tokens with small expected counts."""
    counts = np.bincount(tokens, minlength=len(probs)).astype(float)
    expected = probs.numpy() * len(tokens)
    if counts[expected == 0].sum() > 0:
        return 0.0  # a token the target can never produce was sampled
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def first_two_token_pvalues(tok, pipe, prompt_ids) -> tuple[float, float]:
    out = pipe.generate(prompt_ids, max_new_tokens=2, num_samples=ROWS, gamma=2, seed=11, **SAMPLING)
    first = [t[0] for t in out.token_ids]
    config = SamplingConfig(**SAMPLING)
    with torch.inference_mode():
        q1 = logits_to_probs(pipe.model(torch.tensor([prompt_ids])).logits[0, -1], config)
        mode = int(np.bincount(first).argmax())
        q2 = logits_to_probs(pipe.model(torch.tensor([[*prompt_ids, mode]])).logits[0, -1], config)
    second = [t[1] for t in out.token_ids if t[0] == mode and len(t) > 1]
    assert len(second) > 300
    return law_pvalue(first, q1), law_pvalue(second, q2)


@pytest.fixture(scope="module")
def setup(tok):
    target = make_llama(len(tok), seed=0, layers=2)
    drafter = ModelDrafter(make_llama(len(tok), seed=3, layers=1), tok)
    prompt_ids = tok("the quick brown")["input_ids"]
    return Pipeline(target, tok, drafter=drafter), prompt_ids


def test_sampled_tokens_follow_the_target_distribution(tok, setup):
    pipe, prompt_ids = setup
    p_first, p_second = first_two_token_pvalues(tok, pipe, prompt_ids)
    assert p_first > 1e-3
    assert p_second > 1e-3


def test_a_wrong_verifier_fails_the_same_check(tok, setup, monkeypatch):
    """Negative control: accepting every draft token (ignoring q) must be detected."""

    def accept_all(draft_tokens, p, q, generator=None, draft_lengths=None):
        gamma = draft_tokens.shape[1]
        bonus = torch.multinomial(q[:, gamma], 1, generator=generator).squeeze(1)
        return Verification(num_accepted=torch.full((len(draft_tokens),), gamma), next_tokens=bonus)

    monkeypatch.setattr(speculative, "_rejection_sample", accept_all)
    pipe, prompt_ids = setup
    p_first, p_second = first_two_token_pvalues(tok, pipe, prompt_ids)
    assert min(p_first, p_second) < 1e-6


def test_sampling_is_reproducible_with_a_seed(setup):
    pipe, prompt_ids = setup
    runs = [
        pipe.generate(prompt_ids, max_new_tokens=12, gamma=3, seed=5, **SAMPLING).token_ids for _ in range(2)
    ]
    assert runs[0] == runs[1]
    other = pipe.generate(prompt_ids, max_new_tokens=12, gamma=3, seed=6, num_samples=4, **SAMPLING).token_ids
    assert any(o != runs[0][0] for o in other)
