"""Shared by the BiTA tests (the packed training pass, the trainer, the adapter files): the frozen target
an adapter is built for, once per architecture family the engine runs (Llama-style, GPT-2)."""

import pytest

from tiny import make_gpt2, make_llama


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def bita_target(request):
    make = {"llama": make_llama, "gpt2": make_gpt2}[request.param]
    return make(320, seed=0, layers=2)
