import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM

from specdec.engine import Engine, PackedLinear
from specdec.errors import InvalidArgumentError, PromptError, UnsupportedCacheError
from tiny import make_gpt2, make_llama

VOCAB = 320


@pytest.fixture(params=["llama", "gpt2"], scope="module")
def model(request):
    return make_llama(VOCAB, seed=1) if request.param == "llama" else make_gpt2(VOCAB, seed=1)


def tokens(n, seed=0):
    return torch.randint(3, VOCAB, (1, n), generator=torch.Generator().manual_seed(seed))


def test_sequential_extends_match_full_forward(model):
    x = tokens(12)
    with torch.inference_mode():
        full = model(x).logits
    engine = Engine(model)
    engine.reset(1, 32)
    got = torch.cat([engine.extend(x[:, :5]).logits, engine.extend(x[:, 5:]).logits], dim=1)
    torch.testing.assert_close(got, full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pack", [False, True])
def test_rollback_equivalence(model, pack):
    """extend, roll back, extend == extending directly (bitwise: the same computation)."""
    x, junk = tokens(10), tokens(4, seed=1)
    direct = Engine(model, pack_weights=pack)
    direct.reset(1, 32)
    direct.extend(x[:, :6])
    expected = direct.extend(x[:, 6:]).logits
    rolled = Engine(model, pack_weights=pack)
    rolled.reset(1, 32)
    rolled.extend(x[:, :6])
    rolled.extend(junk)
    rolled.rollback(4)
    assert rolled.num_tokens.tolist() == [6]
    assert torch.equal(rolled.extend(x[:, 6:]).logits, expected)


def test_partial_rollback_inside_block(model):
    x = tokens(10)
    engine = Engine(model)
    engine.reset(1, 32)
    engine.extend(x[:, :4])
    block = engine.extend(x[:, 4:9]).logits
    engine.rollback(3)  # keep x[4:6]
    again = engine.extend(x[:, 6:9]).logits
    torch.testing.assert_close(again, block[:, 2:], rtol=1e-5, atol=1e-5)


def test_packed_linear_is_batch_invariant():
    """Each row's output is bit-identical whatever the number of rows (MKL's GEMM is not)."""
    linear = torch.nn.Linear(96, 200)
    packed = PackedLinear(linear)
    x = torch.randn(8, 96)
    with torch.inference_mode():
        full = packed(x)
        torch.testing.assert_close(full, linear(x), rtol=1e-5, atol=1e-5)
        for rows in (1, 2, 5):
            assert torch.equal(packed(x[:rows].contiguous()), full[:rows])


def test_block_and_single_steps_agree():
    model = make_llama(VOCAB, seed=2, hidden=64)
    x = tokens(11)
    block, single = Engine(model), Engine(model)
    for engine in (block, single):
        engine.reset(1, 32)
        engine.extend(x[:, :5])
    blocked = block.extend(x[:, 5:]).logits
    stepped = torch.cat([single.extend(x[:, i : i + 1]).logits for i in range(5, 11)], dim=1)
    torch.testing.assert_close(blocked, stepped, rtol=1e-5, atol=1e-5)


def test_left_padded_batch_matches_single_rows(model):
    a, b = tokens(9, seed=3)[0].tolist(), tokens(5, seed=4)[0].tolist()
    engine = Engine(model)
    engine.reset(2, 32)
    batch_last = engine.prefill([a, b]).logits[:, -1]
    nxt = engine.extend(torch.tensor([[7, 8], [9, 10]])).logits
    for row, prompt, more in ((0, a, [7, 8]), (1, b, [9, 10])):
        with torch.inference_mode():
            ref = model(torch.tensor([prompt + more])).logits[0]
        torch.testing.assert_close(batch_last[row], ref[len(prompt) - 1], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(nxt[row], ref[len(prompt) :], rtol=1e-5, atol=1e-5)


def test_per_row_rollback_and_compaction(model):
    a, b = tokens(8, seed=5)[0].tolist(), tokens(8, seed=6)[0].tolist()
    engine = Engine(model)
    engine.reset(2, 32)
    engine.prefill([a[:4], b[:4]])
    engine.extend(torch.tensor([a[4:8], b[4:8]]))
    engine.rollback(torch.tensor([1, 3]))  # row 0 keeps a[:7], row 1 keeps b[:5]
    assert engine.num_tokens.tolist() == [7, 5]
    engine.compact()
    assert engine.length == 7
    out = engine.extend(torch.tensor([[a[7]], [b[5]]])).logits[:, 0]
    with torch.inference_mode():
        torch.testing.assert_close(out[0], model(torch.tensor([a])).logits[0, 7], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(out[1], model(torch.tensor([b[:6]])).logits[0, 5], rtol=1e-5, atol=1e-5)


def test_tree_mask_matches_sequential_branches(model):
    """A 5-node tree in one forward equals running each root-to-leaf branch on its own.

    Tree (block indices): 0 → 1 → 3, 0 → 2 → 4; node tokens below.
    """
    prefix = tokens(6, seed=7)
    node_tokens = torch.tensor([[11, 12, 13, 14, 15]])
    parent = [-1, 0, 0, 1, 2]
    tree = torch.eye(5, dtype=torch.bool)
    for node, par in enumerate(parent):
        while par >= 0:
            tree[node, par] = True
            par = parent[par]
    engine = Engine(model)
    engine.reset(1, 32)
    engine.extend(prefix)
    tree_logits = engine.extend(node_tokens, tree_mask=tree).logits[0]
    for branch in ([0, 1, 3], [0, 2, 4]):
        seq = torch.cat([prefix, node_tokens[:, branch]], dim=1)
        with torch.inference_mode():
            ref = model(seq).logits[0, prefix.shape[1] :]
        torch.testing.assert_close(tree_logits[branch], ref, rtol=1e-5, atol=1e-5)
    # Keeping the accepted branch leaves a cache equivalent to having fed that branch alone.
    engine.keep(torch.tensor([[True, False, True, False, True]]))
    assert engine.num_tokens.tolist() == [9]
    nxt = engine.extend(torch.tensor([[16]])).logits[0, 0]
    with torch.inference_mode():
        ref = model(torch.cat([prefix, node_tokens[:, [0, 2, 4]], torch.tensor([[16]])], 1)).logits[0, -1]
    torch.testing.assert_close(nxt, ref, rtol=1e-5, atol=1e-5)


def test_hidden_states_of_chosen_layers(model):
    engine = Engine(model)
    engine.reset(1, 16)
    out = engine.extend(tokens(4), hidden_layers=(0, 2))
    assert set(out.hidden_states) == {0, 2}
    assert out.hidden_states[2].shape == (1, 4, model.config.hidden_size)


def test_sliding_window_model_matches_full_forward():
    torch.manual_seed(0)
    config = MistralConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=4,
        max_position_embeddings=64,
    )
    model = MistralForCausalLM(config).eval()
    x = tokens(12)
    with torch.inference_mode():
        full = model(x).logits
    engine = Engine(model)
    engine.reset(1, 32)
    got = torch.cat(
        [engine.extend(x[:, :3]).logits] + [engine.extend(x[:, i : i + 1]).logits for i in range(3, 12)], 1
    )
    torch.testing.assert_close(got, full, rtol=1e-5, atol=1e-5)


def test_refuses_caches_it_cannot_roll_back():
    model = make_llama(VOCAB)
    model.config.layer_types = ["full_attention", "linear_attention"]
    with pytest.raises(UnsupportedCacheError, match="linear_attention"):
        Engine(model)
    model = make_llama(VOCAB)
    model.config._attn_implementation = "flash_attention_2"
    with pytest.raises(UnsupportedCacheError, match="sdpa"):
        Engine(model)


def test_clear_errors(model):
    engine = Engine(model)
    engine.reset(1, 300)
    with pytest.raises(PromptError, match="context"):
        engine.extend(torch.zeros(1, 257, dtype=torch.long))
    engine.reset(1, 8)
    engine.extend(tokens(3))
    with pytest.raises(InvalidArgumentError, match="roll back"):
        engine.rollback(4)


def test_compaction_inside_extend_keeps_state_updatable(model):
    """A full cache compacts itself mid-extend; rollbacks after that must still work."""
    engine = Engine(model)
    engine.reset(2, 12)
    engine.prefill([[5, 6, 7], [8, 9]])
    for step in range(5):  # rows alternately keep one or two tokens: holes pile up in both
        engine.extend(torch.tensor([[10, 11], [12, 13]]))
        engine.rollback(torch.tensor([step % 2, 1 - step % 2]))
    assert engine.num_tokens.tolist() == [11, 9]
    assert engine.length < 3 + 2 * 5  # the fifth extend only fitted after compaction
    engine.rollback(torch.tensor([2, 1]))
    assert engine.num_tokens.tolist() == [9, 8]
