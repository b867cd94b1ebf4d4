"""Every bad input gets a clear specdec error, not a traceback from inside torch."""

import pytest

from specdec.drafters import ModelDrafter, make_drafter
from specdec.errors import (
    InvalidArgumentError,
    ModelNotFoundError,
    PromptError,
    VocabularyMismatchError,
)
from specdec.pipeline import Pipeline
from tiny import make_gpt2, make_llama, make_tokenizer


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module")
def pipe(tok):
    target = make_llama(len(tok))
    return Pipeline(target, tok, drafter=ModelDrafter(target, tok))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"temperature": -0.5}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": -1}, "top_k"),
        ({"gamma": 0}, "γ"),
        ({"gamma": "sometimes"}, "gamma"),
        ({"num_samples": 0}, "num_samples"),
    ],
)
def test_invalid_parameters(pipe, kwargs, match):
    with pytest.raises(InvalidArgumentError, match=match):
        pipe.generate("hello", **kwargs)


@pytest.mark.parametrize("prompt", ["", [], [[]]])
def test_empty_prompts(pipe, prompt):
    with pytest.raises(PromptError, match=r"empty|no prompts"):
        pipe.generate(prompt)


def test_prompt_longer_than_context(pipe):
    with pytest.raises(PromptError, match="context of 256"):
        pipe.generate(list(range(3, 300)))


def test_token_ids_outside_vocabulary(pipe, tok):
    with pytest.raises(PromptError, match="token ids"):
        pipe.generate([5, len(tok) + 10])


def test_chat_without_template(tok):
    plain_tok = make_tokenizer()
    plain_tok.chat_template = None
    with pytest.raises(InvalidArgumentError, match="chat template"):
        Pipeline(make_llama(len(tok)), plain_tok).generate("hi", chat=True)


def test_vocab_size_mismatch(tok):
    target = make_llama(len(tok))
    with pytest.raises(VocabularyMismatchError, match="320 token ids but the draft predicts 400"):
        Pipeline(target, tok, drafter=ModelDrafter(make_gpt2(400), None))


def test_tokenizer_mismatch(tok):
    other = make_tokenizer()
    other.add_tokens(["<extra>"])  # same model vocab size, different id mapping
    other_model = make_llama(len(tok))
    with pytest.raises(VocabularyMismatchError, match="tokenizers"):
        Pipeline(make_llama(len(tok)), tok, drafter=ModelDrafter(other_model, other))


def test_speculative_without_drafter(tok):
    with pytest.raises(InvalidArgumentError, match="drafter"):
        Pipeline(make_llama(len(tok)), tok).generate("hi", speculative=True)


def test_unknown_drafter_names(tok):
    target = make_llama(len(tok))
    with pytest.raises(InvalidArgumentError, match="first-N"):
        make_drafter("first-x", target, tok)
    with pytest.raises(InvalidArgumentError, match="num_layers"):
        make_drafter("first-9", target, tok)
    with pytest.raises(ModelNotFoundError):
        make_drafter("no-such-draft-model", target, tok)
    with pytest.raises(ModelNotFoundError):
        make_drafter("./missing/dir", target, tok)


def test_text_and_chat_prompts(pipe, tok):
    out = pipe.generate(["hello there", [{"role": "user", "content": "hi"}]], max_new_tokens=3)
    assert len(out.texts) == 2 and all(len(t) == 3 for t in out.token_ids)
    chat_ids = pipe.encode("hi", chat=True)
    assert chat_ids == pipe.encode([{"role": "user", "content": "hi"}], chat=None)
