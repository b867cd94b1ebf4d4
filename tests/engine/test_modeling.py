"""What the engine reads from a transformers model: the name its forward takes the KV cache by, and
when a block's attention is plain causal (SDPA without a mask)."""

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from specdec.engine import Engine
from specdec.engine.modeling import decoder_layers, plain_causal, with_cache
from tiny import make_gpt2, make_llama


class NewStyle(nn.Module):
    def forward(self, input_ids, cache=None):
        return input_ids


class OldStyle(nn.Module):
    def forward(self, input_ids, past_key_values=None):
        return input_ids


class PassesOn(NewStyle):
    def forward(self, *args, **kwargs):
        return super().forward(*args, **kwargs)


def test_the_cache_goes_under_the_name_the_forward_takes():
    cache = object()
    assert with_cache(NewStyle(), cache) == {"cache": cache}  # transformers >= 5.24
    assert with_cache(OldStyle(), cache) == {"past_key_values": cache}  # 5.23
    # a subclass passing *args, **kwargs on takes its parent's (the old name would fail from 5.40)
    assert with_cache(PassesOn(), cache) == {"cache": cache}


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


def causal(rows: int, width: int) -> torch.Tensor:
    return torch.ones(width, width, dtype=torch.bool).tril().expand(rows, 1, width, width).clone()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 3),
    width=st.integers(2, 12),
    flips=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 11), st.integers(0, 11)), max_size=3),
)
def test_plain_causal_is_exactly_the_causal_mask(rows, width, flips):
    """Any flipped entry (a padded key, a tree, a masked diagonal) makes the mask something else."""
    config = make_llama(64).config
    mask = causal(rows, width)
    flips = [(r % rows, q % width, k % width) for r, q, k in flips]
    for r, q, k in flips:
        mask[r, 0, q, k] = ~mask[r, 0, q, k]
    changed = not torch.equal(mask, causal(rows, width))
    assert plain_causal(config, mask) is not changed


def test_plain_causal_needs_keys_of_the_block_alone_and_one_mask_for_every_layer():
    config = make_llama(64).config
    assert plain_causal(config, causal(1, 5))
    assert not plain_causal(config, causal(1, 1))  # a one-token step: nothing to skip
    past = torch.ones(1, 1, 5, 3, dtype=torch.bool)
    assert not plain_causal(config, torch.cat([past, causal(1, 5)], dim=-1))  # earlier slots read
    eager = make_llama(64, attn="eager").config
    assert not plain_causal(eager, causal(1, 5))
    windowed = make_llama(64).config
    windowed.sliding_window = 4
    assert not plain_causal(windowed, causal(1, 5))


def masks_seen(engine: Engine) -> list:
    """The attention mask each call's first decoder layer gets (None: SDPA's own causal attention)."""
    seen = []
    decoder_layers(engine.model)[0].register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs["attention_mask"]), with_kwargs=True
    )
    return seen


def test_a_prefill_into_an_empty_cache_runs_without_a_mask_and_computes_the_same():
    """The unpadded prefill skips the mask; a padded batch, and the steps after, keep theirs; and the
    prefill's logits match the masked prefill's (the model's own forward, lean off)."""
    x = torch.randint(3, 320, (2, 12), generator=torch.Generator().manual_seed(1))
    model = make_llama(320, seed=0)
    lean, masked = Engine(model), Engine(model, lean=False)
    seen = masks_seen(lean)  # every call checked below is the lean engine's, made before the masked one's
    outputs = []
    for engine in (lean, masked):
        engine.reset(1, 32)
        outputs.append(engine.prefill([x[0, :10].tolist()]).logits)
        engine.extend(x[:1, 10:12])
        if engine is lean:
            assert len(seen) == 2 and seen[0] is None and seen[1] is not None
            lean.reset(2, 32)
            lean.prefill([x[0, :10].tolist(), x[1, :7].tolist()])  # left-padded: the mask says which slots
            assert len(seen) == 3 and seen[2] is not None
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-5, atol=1e-5)
