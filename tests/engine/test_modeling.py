"""What the engine reads from a transformers model: here, the name its forward takes the KV cache by."""

import warnings

import pytest
import torch
from torch import nn

from specdec.engine import Engine
from specdec.engine.modeling import with_cache
from tiny import make_gpt2, make_llama


class NewStyle(nn.Module):
    def forward(self, input_ids, cache=None):
        return input_ids


class OldStyle(nn.Module):
    def forward(self, input_ids, past_key_values=None):
        return input_ids


def test_the_cache_goes_under_the_name_the_forward_takes():
    cache = object()
    assert with_cache(NewStyle(), cache) == {"cache": cache}  # transformers >= 5.24
    assert with_cache(OldStyle(), cache) == {"past_key_values": cache}  # 5.23


@pytest.mark.parametrize(("make", "lean"), [(make_llama, None), (make_llama, False), (make_gpt2, None)])
def test_engine_calls_use_the_current_name(make, lean):
    """No deprecation warning from the model's forward (or its layers', on the lean path) in the lean
    probe, a prefill, a block and a one-token step: a renamed argument would be noise on every user's
    console, and an error once transformers drops the old name. The lean probe swallows errors (it
    turns lean off), so a Llama must still come out lean."""
    x = torch.randint(3, 320, (1, 12), generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        engine = Engine(make(320, seed=0), lean=lean)
        engine.reset(1, 32)
        for start, end in ((0, 8), (8, 11), (11, 12)):
            engine.extend(x[:, start:end])
    assert engine.lean == (make is make_llama and lean is None)


def test_a_compiled_module_is_asked_about_the_module_it_wraps():
    compiled = torch.compile(NewStyle())
    assert with_cache(compiled, None) == {"cache": None}
