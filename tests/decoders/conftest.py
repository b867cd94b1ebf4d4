"""Tiny targets, every drafter, and per-target caches of pipelines and plain baselines.

The conformance tests compare hundreds of (method, drafter, setting) runs against plain decoding;
building each pipeline and each plain baseline once per target keeps that affordable.
"""

import pytest
from decoding_cases import Cached

from tiny import make_gpt2, make_llama, make_tokenizer


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def target(request, tok):
    make = make_llama if request.param == "llama" else make_gpt2
    return make(len(tok), seed=0, layers=4)


@pytest.fixture(scope="module")
def cached(target, tok):
    return Cached(target, tok)
