"""Speculative sampling: its sampled output follows the target's distribution exactly (chi-square at a
fixed seed, for both verify rules, chain and tree drafters, top-k and top-p, and ragged batches), a
wrong verifier fails the same check, and acceptance behaves as the drafter predicts."""

from collections import Counter

import numpy as np
import pytest
import torch
from decoding_cases import PROMPTS
from scipy.stats import chisquare

import specdec.decoders.speculative as speculative
from specdec.decoders import SpeculativeSampling
from specdec.drafters import EarlyExitDrafter, ModelDrafter, PromptLookupDrafter
from specdec.drafters.bita import BiTADrafter
from specdec.drafters.tandem import TandemDrafter
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, Verification, logits_to_probs
from specdec.sampling.tree import TreeVerification, children
from tiny import make_llama, make_oracle_tandem, perturbed_copy

ROWS = 4000
SETTINGS = {"top-k": dict(temperature=1.5, top_k=12), "top-p": dict(temperature=0.4, top_p=0.8)}


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


def target_law(model, ids: list[int], sampling: dict) -> torch.Tensor:
    with torch.inference_mode():
        return logits_to_probs(model(torch.tensor([ids])).logits[0, -1], SamplingConfig(**sampling))


def first_two_token_pvalues(pipe, prompt_ids, method, sampling) -> tuple[float, float]:
    out = pipe.generate(prompt_ids, method=method, max_new_tokens=3, num_samples=ROWS, seed=11, **sampling)
    assert out.stats.accepted_tokens > 0  # drafts were really verified, not only plain steps
    first = [t[0] for t in out.token_ids]
    mode = int(np.bincount(first).argmax())
    second = [t[1] for t in out.token_ids if t[0] == mode and len(t) > 1]
    assert len(second) > 300
    return (
        law_pvalue(first, target_law(pipe.model, prompt_ids, sampling)),
        law_pvalue(second, target_law(pipe.model, [*prompt_ids, mode], sampling)),
    )


@pytest.fixture(scope="module")
def law_target(tok):
    return make_llama(len(tok), seed=0, layers=2)


@pytest.fixture(scope="module")
def law_prompt(tok, law_target) -> list[int]:
    """P + the target's greedy continuation of P + P again: prompt lookup then proposes that
    continuation, which the target finds likely, so every drafter's guesses get accepted sometimes."""
    head = tok.encode("the quick brown")
    continuation = Pipeline(law_target, tok).generate(head, method="plain", max_new_tokens=3).token_ids[0]
    return head + continuation + head


LAW_DRAFTERS = {
    "model": lambda target, tok: ModelDrafter(perturbed_copy(target, 1.0), tok),
    # a trimmed output head: p = 0 on odd token ids, q is not
    "model-trimmed-vocab": lambda target, tok: ModelDrafter(
        perturbed_copy(target, 1.0), tok, vocab=torch.arange(0, len(tok), 2)
    ),
    "prompt-lookup": lambda target, tok: PromptLookupDrafter(),
    "early-exit": lambda target, tok: EarlyExitDrafter(target, 1),
    "tandem": lambda target, tok: TandemDrafter(make_oracle_tandem(target, noise=1.0), tok),
    # trees: siblings verified by recursive rejection sampling (rejection) or the coupled walk
    "tree-3": lambda target, tok: ModelDrafter(perturbed_copy(target, 1.0), tok, tree_width=3),
}


@pytest.mark.parametrize("rule", ["coupled", "rejection"])
def test_bita_tree_tokens_follow_the_target_distribution(tok, law_target, law_prompt, rule):
    """BiTA drafts from its third token on (the first mask outputs come with the second): the third
    token, given the most common first two, follows the target's law. One mask token, so γ = 2 leaves
    room for a depth-1 tree of 5 siblings (efficient shape), verified together."""
    torch.manual_seed(0)
    adapter = BiTAAdapter(model_signature(law_target), 4, 1, "deep").eval()
    pipe = Pipeline(law_target, tok, drafter=BiTADrafter(adapter, "efficient"))
    sampling = SETTINGS["top-p"]
    out = pipe.generate(
        law_prompt,
        method=SpeculativeSampling(2, rule),
        max_new_tokens=4,
        num_samples=3 * ROWS,
        seed=11,
        **sampling,
    )
    assert out.stats.accepted_tokens > 0
    prefix = Counter(tuple(t[:2]) for t in out.token_ids).most_common(1)[0][0]
    third = [t[2] for t in out.token_ids if tuple(t[:2]) == prefix and len(t) > 2]
    assert len(third) > 300
    assert law_pvalue(third, target_law(law_target, [*law_prompt, *prefix], sampling)) > 1e-3


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("rule", ["coupled", "rejection"])
@pytest.mark.parametrize("drafter", list(LAW_DRAFTERS))
def test_sampled_tokens_follow_the_target_distribution(tok, law_target, law_prompt, drafter, rule, setting):
    pipe = Pipeline(law_target, tok, drafter=LAW_DRAFTERS[drafter](law_target, tok))
    p_first, p_second = first_two_token_pvalues(
        pipe, law_prompt, SpeculativeSampling(2, rule), SETTINGS[setting]
    )
    assert p_first > 1e-3
    assert p_second > 1e-3


@pytest.mark.parametrize("rule", ["coupled", "rejection"])
def test_each_row_of_a_ragged_batch_follows_its_own_law(tok, law_target, law_prompt, rule):
    """Left-padded rows of different lengths, drafted and verified together: each row's first token
    follows the target's law for that row's own prompt."""
    pipe = Pipeline(law_target, tok, drafter=LAW_DRAFTERS["model"](law_target, tok))
    prompts = [law_prompt, tok.encode("def add(a, b):")]
    sampling = SETTINGS["top-k"]
    out = pipe.generate(
        prompts,
        method=SpeculativeSampling(2, rule),
        max_new_tokens=1,
        num_samples=ROWS // 2,
        seed=5,
        **sampling,
    )
    for i, prompt in enumerate(prompts):
        first = [t[0] for t in out.token_ids[i * ROWS // 2 : (i + 1) * ROWS // 2]]
        assert law_pvalue(first, target_law(law_target, prompt, sampling)) > 1e-3


def _accept_all(draft, logits, sampling, draws):
    """A wrong verifier: keeps every draft token, whatever q says."""
    gamma = draft.gamma
    bonus = speculative.target_choices(logits, sampling, draws)(gamma, torch.arange(len(draft.tokens)))
    return Verification(num_accepted=draft.row_lengths(), next_token=bonus)


def _accept_first_path(tokens, parents, *_):
    """A wrong tree verifier: keeps the first child at every depth, whatever q says."""
    kids, path = children(parents), []
    while kids[path[-1] + 1 if path else 0]:
        path.append(kids[path[-1] + 1 if path else 0][0])
    batch = tokens.shape[0]
    return TreeVerification(
        num_accepted=torch.full((batch,), len(path), dtype=torch.long),
        next_token=tokens[:, path[-1]].clone(),
        path=torch.tensor(path, dtype=torch.long).expand(batch, -1).clone(),
    )


@pytest.mark.parametrize("rule", ["coupled", "rejection"])
def test_a_wrong_tree_verifier_fails_the_same_check(tok, law_target, law_prompt, monkeypatch, rule):
    """Negative control for trees: keeping the first path of every tree must be detected."""
    monkeypatch.setattr(speculative, "tree_match_verify", _accept_first_path)
    monkeypatch.setattr(speculative, "tree_rejection_sample", _accept_first_path)
    pipe = Pipeline(law_target, tok, drafter=LAW_DRAFTERS["tree-3"](law_target, tok))
    p_first, p_second = first_two_token_pvalues(
        pipe, law_prompt, SpeculativeSampling(2, rule), SETTINGS["top-k"]
    )
    assert min(p_first, p_second) < 1e-6


@pytest.mark.parametrize("rule", ["coupled", "rejection"])
def test_a_wrong_verifier_fails_the_same_check(tok, law_target, law_prompt, monkeypatch, rule):
    """Negative control: accepting every draft token (ignoring q) must be detected."""
    monkeypatch.setattr(speculative, f"{rule}_verify", _accept_all)
    pipe = Pipeline(law_target, tok, drafter=LAW_DRAFTERS["model"](law_target, tok))
    p_first, p_second = first_two_token_pvalues(
        pipe, law_prompt, SpeculativeSampling(2, rule), SETTINGS["top-k"]
    )
    assert min(p_first, p_second) < 1e-6


def test_acceptance_matches_the_drafter(cached):
    """A draft identical to the target is always accepted; a random one almost never."""
    same = cached.pipe("self").generate(PROMPTS[:1], method=SpeculativeSampling(4), max_new_tokens=20)
    assert same.stats.acceptance_rate == 1.0
    assert same.stats.tokens_per_target_call > 4.0
    other = cached.pipe("independent").generate(PROMPTS[:1], method=SpeculativeSampling(4), max_new_tokens=20)
    assert other.stats.acceptance_rate < 0.5


@pytest.mark.parametrize(("drafter", "ratio"), [("model", 0.5), ("prompt-lookup", 0.9)])
def test_coupled_acceptance_is_close_to_rejection_sampling(tok, law_target, law_prompt, drafter, ratio):
    """Coupling gives up some acceptance for seed-determined texts (at least (1 − TV)/(1 + TV) of
    rejection sampling's 1 − TV); for a deterministic draft (one-hot p) both accept with q(d)."""
    pipe = Pipeline(law_target, tok, drafter=LAW_DRAFTERS[drafter](law_target, tok))
    rates = {
        rule: pipe.generate(
            law_prompt,
            method=SpeculativeSampling(3, rule),
            max_new_tokens=4,
            num_samples=1000,
            seed=2,
            **SETTINGS["top-p"],
        ).stats.acceptance_rate
        for rule in ("coupled", "rejection")
    }
    assert rates["rejection"] > 0.1
    assert ratio * rates["rejection"] < rates["coupled"] <= rates["rejection"] + 0.03


def test_several_samples_of_one_prompt_batch_like_single_runs(cached):
    pipe = cached.pipe("int8")
    single = pipe.generate(PROMPTS[1], max_new_tokens=16)
    many = pipe.generate(PROMPTS[1], max_new_tokens=16, num_samples=3)
    assert many.token_ids == single.token_ids * 3
