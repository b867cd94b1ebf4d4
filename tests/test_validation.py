"""Every bad input gets one clear specdec error before any work is done, never a traceback from inside
torch, jinja or the tokenizer; a property-based fuzz holds every argument of ``generate`` to that."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdec.decoders import AdaptiveGamma, BiLD, SpeculativeSampling
from specdec.drafters import ModelDrafter, PromptLookupDrafter, make_drafter
from specdec.errors import InvalidArgumentError, ModelNotFoundError, PromptError, SpecDecError
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig
from tiny import make_llama, make_tokenizer


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module")
def pipe(tok):
    target = make_llama(len(tok))
    return Pipeline(target, tok, drafter=ModelDrafter(target, tok))


@pytest.fixture(scope="module")
def plain_pipe(tok):
    return Pipeline(make_llama(len(tok)), tok)


# --- generate() arguments ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"max_new_tokens": True}, "max_new_tokens"),  # a bool is not a count (True used to mean 1)
        ({"max_new_tokens": 2.5}, "max_new_tokens"),
        ({"num_samples": 0}, "num_samples"),
        ({"num_samples": True}, "num_samples"),
        ({"temperature": -0.5}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_k": -1}, "top_k"),
        ({"method": "sometimes"}, "method"),
        ({"method": 3}, "method"),
        ({"seed": 2**64}, "seed"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "7"}, "seed"),
        ({"seed": True}, "seed"),
        ({"seed": [1, 2]}, "one per prompt"),
        ({"stop": ""}, "stop"),
        ({"stop": [None]}, "stop"),
        ({"chat": "yes"}, "chat"),
        ({"stream": 5}, "stream"),
    ],
)
def test_invalid_generate_arguments(pipe, kwargs, match):
    with pytest.raises(InvalidArgumentError, match=match):
        pipe.generate("hello", **kwargs)


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        ("", "empty"),
        ([], "no prompts"),
        ([[]], "empty"),
        (None, "got NoneType"),
        (5, "got int"),
        ([1.5, 2.0], "integers"),
        ([5, True], "integers"),
        (torch.tensor([1.0, 2.0]), "integers"),
        (torch.tensor([True, False]), "integers"),
        (torch.zeros(1, 2, 3, dtype=torch.long), "1-D"),
        ([5, 330], r"\[0, 320\)"),
        (list(range(3, 300)), "context of 256"),
        ([{"role": "user"}], "'content'"),
        ([{"content": "hi"}], "'role'"),
        ([{"role": "user", "content": None}], "'content'"),
        ([{"role": "user", "content": "hi"}, "hi"], "message 1"),
    ],
)
def test_invalid_prompts(pipe, prompt, match):
    with pytest.raises(PromptError, match=match):
        pipe.generate(prompt, max_new_tokens=2)


def test_a_chat_template_that_fails_is_a_prompt_error(tok):
    strict = make_tokenizer()
    strict.chat_template = (
        "{% for m in messages %}{{ raise_exception('no ' + m['role'] + ' allowed') }}{% endfor %}"
    )
    with pytest.raises(PromptError, match=r"chat template cannot render.*no user allowed"):
        Pipeline(make_llama(len(tok)), strict).generate("hi", chat=True)


def test_tensor_prompts(pipe, tok):
    ids = tok.encode("the quick brown")
    one = pipe.generate(ids, max_new_tokens=4).token_ids
    assert pipe.generate(torch.tensor(ids), max_new_tokens=4).token_ids == one
    assert pipe.generate(torch.tensor([ids, ids]), max_new_tokens=4).token_ids == one * 2


def test_text_and_chat_prompts(pipe):
    out = pipe.generate(["hello there", [{"role": "user", "content": "hi"}]], max_new_tokens=3)
    assert len(out.texts) == 2 and all(len(t) == 3 for t in out.token_ids)
    assert pipe.encode("hi", chat=True) == pipe.encode([{"role": "user", "content": "hi"}])


def test_a_prompt_filling_the_context_gets_its_one_token(plain_pipe):
    out = plain_pipe.generate(list(range(3, 259)), max_new_tokens=5)
    assert len(out.token_ids[0]) == 1 and out.finish_reasons == ["context"]


def test_a_failed_call_leaves_nothing_behind(pipe):
    before = pipe.generate("the quick", max_new_tokens=6, temperature=1.0, seed=3)
    for bad in ({"stop": [""]}, {"seed": "x"}, {"method": "nope"}):
        with pytest.raises(SpecDecError):
            pipe.generate("the quick", max_new_tokens=6, temperature=1.0, **bad)
    assert pipe.generate("the quick", max_new_tokens=6, temperature=1.0, seed=3).token_ids == before.token_ids


def test_methods_need_a_drafter(plain_pipe):
    for method in ("sps", SpeculativeSampling(2), BiLD()):
        with pytest.raises(InvalidArgumentError, match="needs a drafter"):
            plain_pipe.generate("hi", method=method)


def test_text_without_a_tokenizer(tok):
    bare = Pipeline(make_llama(len(tok)))
    with pytest.raises(InvalidArgumentError, match="tokenizer"):
        bare.generate("hi")
    with pytest.raises(InvalidArgumentError, match="tokenizer"):
        bare.generate([5, 6], stop="x")
    assert len(bare.generate([5, 6], max_new_tokens=2).token_ids[0]) == 2


def test_chat_without_template(tok):
    plain_tok = make_tokenizer()
    plain_tok.chat_template = None
    with pytest.raises(InvalidArgumentError, match="chat template"):
        Pipeline(make_llama(len(tok)), plain_tok).generate("hi", chat=True)


# --- objects built by users --------------------------------------------------------------------------


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


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fallback_threshold": 1.5},
        {"fallback_threshold": -0.1},
        {"fallback_threshold": True},
        {"rollback_threshold": -1.0},
        {"rollback_threshold": math.nan},
        {"rollback_threshold": "3"},
        {"max_small_tokens": 0},
        {"max_small_tokens": 2.5},
    ],
)
def test_invalid_bild_settings_are_refused(kwargs):
    with pytest.raises(InvalidArgumentError):
        BiLD(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gamma": 0}, "γ"),
        ({"gamma": "sometimes"}, "gamma"),
        ({"gamma": 2.0}, "γ"),
        ({"verify": "x"}, "verify"),
    ],
)
def test_invalid_sps_settings_are_refused(kwargs, match):
    with pytest.raises(InvalidArgumentError, match=match):
        SpeculativeSampling(**kwargs)


@pytest.mark.parametrize("decay", [0, 1, 1.5, True])
def test_invalid_adaptive_decay(decay):
    with pytest.raises(InvalidArgumentError, match="decay"):
        AdaptiveGamma(decay=decay)


def test_pipeline_arguments(tok):
    target = make_llama(len(tok))
    with pytest.raises(InvalidArgumentError, match="Drafter"):
        Pipeline(target, tok, drafter="prompt-lookup")
    with pytest.raises(InvalidArgumentError, match="PreTrainedModel"):
        Pipeline("smollm2-135m", tok)
    with pytest.raises(InvalidArgumentError, match="pack_weights"):
        Pipeline(target, tok, pack_weights="yes")


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
    with pytest.raises(InvalidArgumentError, match="drafter"):
        make_drafter(None, target, tok)


# --- fuzz --------------------------------------------------------------------------------------------
ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 40),
    st.sampled_from([2**64, -(2**63), 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.lists(st.one_of(st.integers(-3, 400), st.floats(), st.text(max_size=3), st.none()), max_size=3),
    st.dictionaries(
        st.sampled_from(["role", "content", "x"]), st.one_of(st.text(max_size=3), st.none()), max_size=2
    ),
    st.sampled_from([torch.tensor([1.5]), torch.tensor([[4, 5]]), torch.tensor(3), object(), b"hi"]),
)
ARGUMENTS = [
    "prompts",
    "max_new_tokens",
    "temperature",
    "top_k",
    "top_p",
    "num_samples",
    "stop",
    "seed",
    "chat",
    "method",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(ARGUMENTS), value=ANYTHING)
def test_fuzzed_arguments_either_work_or_raise_a_specdec_error(pipe, name, value):
    """Any value for any one argument (the others valid): generation succeeds or raises a SpecDecError;
    a new parameter of generate() belongs in ARGUMENTS."""
    kwargs = {"max_new_tokens": 3, "temperature": 0.7, "seed": 0, name: value}
    prompt = kwargs.pop("prompts", "the quick")
    try:
        out = pipe.generate(prompt, **kwargs)
    except SpecDecError:
        return
    assert all(len(ids) >= 1 for ids in out.token_ids)


def test_the_fuzz_covers_every_argument(pipe):
    import inspect

    parameters = set(inspect.signature(pipe.generate).parameters) - {"stream"}
    assert parameters == set(ARGUMENTS)


def test_prompt_lookup_settings():
    with pytest.raises(InvalidArgumentError, match="min_ngram"):
        PromptLookupDrafter(max_ngram=1, min_ngram=2)


def test_a_request_that_cannot_fit_is_refused_at_once(pipe):
    import time

    from specdec.errors import CacheMemoryError

    start = time.perf_counter()
    with pytest.raises(CacheMemoryError, match="GiB of KV cache"):
        pipe.generate("hi", num_samples=10**12, max_new_tokens=2)
    assert time.perf_counter() - start < 5  # decided before any per-row work
