"""Grouped-query attention over blocks, reading each key/value head in place (engine/attention.py)."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

from specdec.engine import Engine, attention
from specdec.engine.attention import NAME, grouped_attention, grouped_attention_copy, grouped_sdpa_attention
from specdec.engine.kernels import packing_supported
from tiny import make_llama


def case(batch, kv_heads, groups, length, past, shared_mask, seed):
    """Random query/key/value and a boolean block mask in which every query sees at least itself."""
    g = torch.Generator().manual_seed(seed)
    dim, keys = 8, past + length
    query = torch.randn(batch, kv_heads * groups, length, dim, generator=g)
    key, value = (torch.randn(batch, kv_heads, keys, dim, generator=g) for _ in range(2))
    mask = torch.rand(1 if shared_mask else batch, 1, length, keys, generator=g) < 0.6
    mask[..., torch.arange(length), past + torch.arange(length)] = True
    module = nn.Module()
    module.num_key_value_groups = groups
    return module, query, key, value, mask


shapes = st.tuples(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(2, 4),
    st.integers(2, 6),
    st.integers(0, 40),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(shapes, st.integers(0, 2**16))
def test_grouped_attention_is_transformers_sdpa_attention(shape, seed):
    module, query, key, value, mask = case(*shape, seed)
    ours, _ = grouped_sdpa_attention(module, query, key, value, mask, scaling=0.3)
    theirs, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=0.3)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(shapes, st.booleans(), st.integers(0, 2**16))
def test_grouped_attention_is_sdpa_over_repeated_heads(shape, masked, seed):
    """The helper under the registered function: with a mask, or none (every key seen)."""
    _, query, key, value, mask = case(*shape, seed)
    mask = mask if masked else None
    groups = query.shape[1] // key.shape[1]
    ours = grouped_attention(query, key, value, mask)
    theirs = F.scaled_dot_product_attention(query, repeat_kv(key, groups), repeat_kv(value, groups), mask)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_a_wrong_head_to_group_order_is_caught():
    """The control: heads grouped as h % H_kv instead of h // groups give other outputs, so the test
    above would see a grouping mistake."""
    module, query, key, value, mask = case(2, 2, 3, 4, 10, False, seed=1)
    heads = torch.arange(6).reshape(2, 3).T.reshape(-1)  # 0 3 1 4 2 5: the interleaved order
    wrong, _ = grouped_sdpa_attention(module, query[:, heads], key, value, mask)
    theirs, _ = sdpa_attention_forward(module, query, key, value, mask)
    assert not torch.allclose(wrong, theirs[:, :, heads], atol=1e-3)  # the same queries, other key heads


@pytest.mark.parametrize("groups, length", [(1, 4), (3, 1)])
def test_what_it_does_not_pack_is_transformers_own_computation(groups, length):
    """No grouping, or a one-token step (transformers packs those itself): the same call, bit for bit."""
    module, query, key, value, mask = case(2, 2, groups, length, 7, False, seed=2)
    ours, _ = grouped_sdpa_attention(module, query, key, value, mask)
    theirs, _ = sdpa_attention_forward(module, query, key, value, mask)
    assert torch.equal(ours, theirs)


@pytest.mark.skipif(not packing_supported(make_llama(64)), reason="no oneDNN packing on this machine")
def test_the_engine_uses_it_on_its_own_copy_only():
    model = make_llama(64)
    engine = Engine(model)
    assert engine.model.config._attn_implementation == NAME
    assert model.config._attn_implementation == "sdpa"
    eager = make_llama(64, attn="eager")
    assert Engine(eager).model.config._attn_implementation == "eager"


def test_the_copy_a_compiled_step_runs_shares_the_weights_and_leaves_the_model_alone(monkeypatch):
    model = make_llama(64)
    copied = grouped_attention_copy(model)
    assert copied.config._attn_implementation == NAME
    assert copied.model.layers[0].self_attn.config is copied.config
    assert model.config._attn_implementation == "sdpa"
    assert all(a is b for a, b in zip(copied.parameters(), model.parameters(), strict=True))
    calls = []
    counted = lambda *a, **k: calls.append(1) or grouped_attention(*a, **k)  # noqa: E731
    monkeypatch.setattr(attention, "grouped_attention", counted)
    ids = torch.randint(3, 64, (2, 9), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0  # a padded row: a 4-D mask, which the grouped kernel takes
    with torch.no_grad():
        got, want = copied(ids, attention_mask=mask).logits, model(ids, attention_mask=mask).logits
    assert len(calls) == model.config.num_hidden_layers  # the copy's layers only, not the model's
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
