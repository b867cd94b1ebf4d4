"""Linears that read one input, packed as one weight (engine/kernels.py)."""

import pytest
import torch
from torch import nn

from specdec.engine import Engine, PackedLinear, packing_supported
from specdec.engine.kernels import (
    SharedInputLinears,
    SharedInputMember,
    pack_linear_layers,
    shared_input_groups,
    two_token_forward,
)
from tiny import make_gpt2, make_llama

VOCAB = 320


def test_groups_are_the_siblings_that_read_one_input():
    """q/k/v and gate/up of every layer; o_proj, down_proj and the head read inputs of their own."""
    model = make_llama(VOCAB, layers=2)
    groups = shared_input_groups(model, two_token_forward)
    expected = []
    for layer in range(2):
        attention, mlp = f"model.layers.{layer}.self_attn", f"model.layers.{layer}.mlp"
        expected += [[f"{attention}.{p}_proj" for p in "qkv"], [f"{mlp}.gate_proj", f"{mlp}.up_proj"]]
    assert sorted(groups) == sorted(expected)
    assert shared_input_groups(make_gpt2(VOCAB), two_token_forward) == []  # Conv1D layers, one lm_head


class _Toy(nn.Module):
    """Three siblings: ``a`` and ``c`` read ``x``; ``b`` reads ``y``, or ``x`` when ``b_reads_x``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b, self.c = nn.Linear(48, 40), nn.Linear(48, 24), nn.Linear(48, 8)
        self.b_reads_x = False

    def forward(self, x, y, order="abc"):
        inputs = {"a": x, "b": x if self.b_reads_x else y, "c": x}
        return {name: getattr(self, name)(inputs[name]) for name in order}


def _toy_example(model):
    return model(torch.randn(3, 48), torch.randn(3, 48))


def test_members_get_their_own_slice_of_their_own_input_in_any_order():
    """A member's output is its layer on the input it was given, whatever the other members saw or
    the order they ran in; once all have run the group holds no tensor."""
    toy = _Toy()
    if not packing_supported(toy):
        pytest.skip("no oneDNN on this CPU")
    packed = pack_linear_layers(toy, _toy_example)
    assert isinstance(packed.a, SharedInputMember) and isinstance(packed.c, SharedInputMember)
    assert isinstance(packed.b, PackedLinear)  # read its own input in the example
    group = packed.a.group
    x, x2 = torch.randn(5, 48), torch.randn(5, 48)
    with torch.inference_mode():
        for order in ("abc", "cba", "aac", "ca", "a"):
            got = packed(x, x2, order)
            for name, out in got.items():
                want = getattr(toy, name)(x2 if name == "b" else x)
                torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
            assert (group.product.input is None) == (order != "a")  # held while a member has yet to take it
        packed.a(x)
        got_c = packed.c(x2)  # another input than the one ``a`` left in the group
    torch.testing.assert_close(got_c, toy.c(x2), rtol=1e-5, atol=1e-5)


def test_a_group_computes_one_product_per_input():
    toy = _Toy()
    toy.b_reads_x = True
    if not packing_supported(toy):
        pytest.skip("no oneDNN on this CPU")
    packed = pack_linear_layers(toy, _toy_example)
    group = packed.a.group
    assert isinstance(group, SharedInputLinears)
    assert [member.index for member in (packed.a, packed.b, packed.c)] == [0, 1, 2]
    calls = []
    kernel = group.kernel.forward
    group.kernel.forward = lambda x: calls.append(x) or kernel(x)
    x = torch.randn(4, 48)
    with torch.inference_mode():
        packed(x, None, "bca")
        assert len(calls) == 1
        whole = torch.cat([packed.a(x), packed.b(x), packed.c(x)], dim=-1)
        assert len(calls) == 2
        assert torch.equal(whole, kernel(x))


@pytest.mark.parametrize("in_features", [96, 1536])
def test_a_member_is_batch_invariant(in_features):
    """Each row of a member's output is bit-identical whatever the number of rows, a one-token step's
    ``[1, 1, K]`` included, as for :class:`PackedLinear`."""
    parent = nn.Module()
    parent.gate, parent.up = nn.Linear(in_features, 200, bias=False), nn.Linear(in_features, 72, bias=False)
    if not packing_supported(parent):
        pytest.skip("no oneDNN on this CPU")
    group = SharedInputLinears([parent.gate, parent.up])
    gate, up = SharedInputMember(group, 0), SharedInputMember(group, 1)
    x = torch.randn(8, in_features)
    with torch.inference_mode():
        full = gate(x), up(x)
        for rows in (1, 2, 5):
            part = x[:rows].contiguous()
            assert torch.equal(gate(part), full[0][:rows]) and torch.equal(up(part), full[1][:rows])
        one = x[None, :1]
        assert torch.equal(gate(one), full[0][None, :1]) and torch.equal(up(one), full[1][None, :1])


def test_an_engine_packs_shared_input_linears_together():
    model = make_llama(VOCAB, seed=1)
    engine = Engine(model, pack_weights=True)
    members = [m for m in engine.model.modules() if isinstance(m, SharedInputMember)]
    assert len(members) == 5 * model.config.num_hidden_layers
    x = torch.randint(3, VOCAB, (1, 12), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        want = model(x).logits
    engine.reset(1, 32)
    torch.testing.assert_close(engine.extend(x).logits, want, rtol=1e-5, atol=1e-5)
