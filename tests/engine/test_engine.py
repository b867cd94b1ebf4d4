import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM

from specdec.engine import Engine, PackedLinear, packing_supported
from specdec.engine.cache import SlotLayer
from specdec.engine.modeling import with_cache
from specdec.errors import CacheMemoryError, InvalidArgumentError, PromptError, UnsupportedCacheError
from specdec.pipeline import Pipeline
from tiny import make_gpt2, make_llama

VOCAB = 320
MODELS = {
    "llama": lambda: make_llama(VOCAB, seed=1),
    "llama-eager": lambda: make_llama(VOCAB, seed=1, attn="eager"),  # additive float masks
    "gpt2": lambda: make_gpt2(VOCAB, seed=1),
}


@pytest.fixture(params=list(MODELS), scope="module")
def model(request):
    return MODELS[request.param]()


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("in_features", [96, 1536])
def test_packed_linear_is_batch_invariant(dtype, in_features):
    """Each row's output is bit-identical whatever the number of rows (MKL's GEMM is not). 1536 is
    SmolLM2's MLP width: on an AMX Xeon oneDNN computes a lone row of more than 1,024 inputs by
    another kernel, which a one-token step must not see."""
    linear = torch.nn.Linear(in_features, 200).to(dtype)
    if not packing_supported(linear):
        pytest.skip(f"oneDNN has no {dtype} kernels for this CPU")
    packed = PackedLinear(linear)
    x = torch.randn(8, in_features).to(dtype)
    with torch.inference_mode():
        full = packed(x)
        tol = 1e-5 if dtype == torch.float32 else 2e-2
        torch.testing.assert_close(full, linear(x), rtol=tol, atol=tol)
        for rows in (1, 2, 5):
            assert torch.equal(packed(x[:rows].contiguous()), full[:rows])
        assert torch.equal(packed(x[None, :1]), full[None, :1])  # a one-token step's [1, 1, K]


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


@pytest.mark.parametrize("one_token", [False, pytest.param(True, marks=pytest.mark.shipped_compile)])
def test_compiled_static_steps_match_eager_steps(one_token, monkeypatch):
    """A compiled engine's blocks (full-capacity masks, slot indices as a tensor) compute what the
    eager engine computes, through padding rows, a tree block, given embeddings (BiTA's masks: a graph
    of their own, checked once), rollback, compaction and growth; the
    prefill, blocks wider than STATIC_WIDTHS and (unless ``one_token``) one-token steps stay eager.
    Its graphs run the user's own weights (inductor's GEMMs), never the eager engine's packed kernels."""
    from specdec.engine.engine import STATIC_WIDTHS

    model = make_llama(VOCAB, seed=2, hidden=64)
    x = torch.randint(3, VOCAB, (2, 80), generator=torch.Generator().manual_seed(0))
    eager, compiled = Engine(model), Engine(model)
    compiled.compile_steps(one_token=one_token)
    calls = []
    compiled.compiled = _counting(compiled.compiled, calls)
    tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    pad = torch.tensor([[True, True, True], [True, False, False]])
    given = torch.randn(2, 3, 64, generator=torch.Generator().manual_seed(1))
    replaced = torch.tensor([[False, True, True], [False, False, True]])
    for engine in (eager, compiled):
        engine.reset(2, 16)
    outs = {id(e): [] for e in (eager, compiled)}
    for engine in (eager, compiled):
        log = outs[id(engine)]
        log.append(engine.extend(x[:, :10]).logits)  # prefill: eager in both
        log.append(engine.extend(x[:, 10:11]).logits)
        log.append(engine.extend(x[:, 11:14], token_mask=pad).logits)
        log.append(engine.extend(x[:, 14:17], tree_mask=tree).logits)
        engine.keep(torch.tensor([[True, False, True], [True, True, False]]))
        engine.rollback(torch.tensor([1, 0]))
        if not one_token:  # a graph of its own: compiled once, in the cheaper case
            log.append(engine.extend(x[:, 17:20], embeds=given, embeds_mask=replaced).logits)
            engine.rollback(3)
        for i in range(17, 40, 4):  # past the first capacity: compaction and growth on the way
            log.append(engine.extend(x[:, i : i + 4]).logits)
            engine.rollback(1)
        log.append(engine.extend(x[:, 40 : 41 + STATIC_WIDTHS]).logits)  # too wide: eager
    for got, want in zip(outs[id(compiled)], outs[id(eager)], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert (
        torch.equal(compiled.slots.valid, eager.slots.valid) and compiled.slots.length == eager.slots.length
    )
    # All but the prefill and the too-wide block, and the one-token step unless it compiles too.
    assert len(calls) == len(outs[id(eager)]) - 2 - (not one_token)
    kernels, compute = [], PackedLinear.compute
    monkeypatch.setattr(PackedLinear, "compute", lambda self, x: kernels.append(self) or compute(self, x))
    compiled.extend(x[:, 50:52])
    assert len(calls) == len(outs[id(eager)]) - 1 - (not one_token)  # a compiled block
    assert kernels == []
    compiled.extend(x[:, 52 : 53 + STATIC_WIDTHS])  # too wide: the eager engine's packed kernels
    assert len(kernels) == 4 * model.config.num_hidden_layers + 1  # qkv, o, gate-up and down a layer; head


def _counting(fn, calls):
    def counted(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    return counted


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
    assert engine.slots.length == 7
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
    """The values the model itself reports with output_hidden_states, for a block after a prefix."""
    x = tokens(9)
    with torch.inference_mode():
        reference = model(x, output_hidden_states=True).hidden_states
    engine = Engine(model)
    engine.reset(1, 16)
    engine.extend(x[:, :5])
    out = engine.extend(x[:, 5:], hidden_layers=(0, 1, 2))
    assert set(out.hidden_states) == {0, 1, 2}
    for layer in (0, 1, 2):
        torch.testing.assert_close(out.hidden_states[layer], reference[layer][:, 5:], rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out.hidden_states[1], out.hidden_states[2])  # distinct layers, not one copy


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


def test_keep_selects_a_path_per_row_of_a_batch(model):
    """Each row keeps its own path of a tree block; the caches then match feeding those paths alone."""
    prefixes = [tokens(5, seed=8)[0].tolist(), tokens(3, seed=9)[0].tolist()]
    nodes = torch.tensor([[11, 12, 13], [21, 22, 23]])
    tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)  # root with two children
    engine = Engine(model)
    engine.reset(2, 32)
    engine.prefill(prefixes)
    engine.extend(nodes, tree_mask=tree)
    engine.keep(torch.tensor([[True, True, False], [True, False, True]]))
    assert engine.num_tokens.tolist() == [7, 5]
    nxt = engine.extend(torch.tensor([[30], [31]])).logits[:, 0]
    paths = [prefixes[0] + [11, 12, 30], prefixes[1] + [21, 23, 31]]
    for row, path in enumerate(paths):
        with torch.inference_mode():
            torch.testing.assert_close(
                nxt[row], model(torch.tensor([path])).logits[0, -1], rtol=1e-5, atol=1e-5
            )


def test_the_cache_grows_from_a_small_start_and_stays_exact(model):
    x = tokens(60)
    with torch.inference_mode():
        full = model(x).logits
    engine = Engine(model)
    engine.reset(1, 4)
    pieces, capacities = [], []
    for start in range(0, 60, 7):
        pieces.append(engine.extend(x[:, start : start + 7]).logits)
        capacities.append(engine.cache.capacity)
    torch.testing.assert_close(torch.cat(pieces, 1), full, rtol=1e-5, atol=1e-5)
    assert capacities[0] < capacities[-1] and capacities == sorted(capacities)
    assert engine.cache.capacity <= 2 * 60


def test_capacity_never_exceeds_the_context_window(model):
    engine = Engine(model)
    engine.reset(1, 10_000)
    assert engine.cache.capacity == 256  # the tiny models' context
    engine.reset(2, 8)
    engine.prefill([tokens(100)[0].tolist(), tokens(3)[0].tolist()])
    for _ in range(150):  # rows hold very different counts: slots of the short row are holes
        engine.extend(torch.tensor([[5, 6], [7, 8]]))
        engine.rollback(torch.tensor([1, 1]))
    assert engine.num_tokens.tolist() == [250, 153]
    assert engine.cache.capacity <= 256 + 2
    assert engine.room().tolist() == [6, 103]


def test_a_cache_that_cannot_grow_is_a_clear_error(model, monkeypatch):
    def fail(self, capacity, rows):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory")

    monkeypatch.setattr(SlotLayer, "grow", fail)
    engine = Engine(model)
    engine.reset(1, 4)
    engine.extend(tokens(4))
    with pytest.raises(CacheMemoryError, match=r"could not grow to .* lower max_new_tokens"):
        engine.extend(tokens(4))


def test_compaction_inside_extend_keeps_state_updatable(model):
    """A full cache compacts itself mid-extend; rollbacks after that must still work."""
    engine = Engine(model)
    engine.reset(2, 12)
    engine.prefill([[5, 6, 7], [8, 9]])
    for step in range(5):  # rows alternately keep one or two tokens: holes pile up in both
        engine.extend(torch.tensor([[10, 11], [12, 13]]))
        engine.rollback(torch.tensor([step % 2, 1 - step % 2]))
    assert engine.num_tokens.tolist() == [11, 9]
    assert engine.slots.length < 3 + 2 * 5  # the fifth extend only fitted after compaction
    engine.rollback(torch.tensor([2, 1]))
    assert engine.num_tokens.tolist() == [9, 8]


def prefix_states(model, n: int, seed: int = 3) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Random keys/values of ``n`` slots for every layer, shaped like the model's cache."""
    config = model.config
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = config.hidden_size // config.num_attention_heads
    generator = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randn(1, heads, n, head_dim, generator=generator),
            torch.randn(1, heads, n, head_dim, generator=generator),
        )
        for _ in range(config.num_hidden_layers)
    ]


@pytest.mark.parametrize("pack", [False, True])
def test_reserved_slots_are_invisible_unless_a_query_asks(model, pack):
    """Tokens that don't ask see exactly what they would without reserved slots (bit for bit), through
    rollback and compaction; a query that asks sees the given states as a P-tuning-v2 prefix would."""
    x = tokens(12)
    plain = Engine(model, pack_weights=pack)
    plain.reset(1, 8)
    expected = torch.cat([plain.extend(x[:, :5]).logits, plain.extend(x[:, 5:]).logits], dim=1)
    engine = Engine(model, pack_weights=pack)
    engine.reset(1, 8, reserved=3)
    engine.write_reserved(prefix_states(model, 3))
    first = engine.extend(x[:, :5]).logits
    engine.extend(tokens(4, seed=5))  # junk, rolled back: a hole the growth below compacts away
    engine.rollback(4)
    got = torch.cat([first, engine.extend(x[:, 5:]).logits], dim=1)
    assert engine.num_tokens.tolist() == [12] and engine.slots.reserved == 3
    assert torch.equal(got, expected)
    # A query that sees the reserved slots: the model given them as past keys/values (no positions).
    from transformers import DynamicCache

    ask = engine.extend(x[:, :1], sees_reserved=torch.ones(1, 1, dtype=torch.bool)).logits
    past = DynamicCache()
    states = prefix_states(model, 3)
    seq = torch.cat([x, x[:, :1]], dim=1)
    for layer, (k, v) in enumerate(states):
        past.update(k, v, layer)
    hidden_mask = torch.ones(1, 1, 13, 3 + 13, dtype=torch.bool).tril(diagonal=3)
    hidden_mask[..., :, :3] = False
    hidden_mask[..., -1, :3] = True  # only the last query sees the prefix
    with torch.inference_mode():
        from specdec.engine.modeling import attention_masks

        positions = torch.arange(13)[None]
        key_pos = torch.cat([torch.full((1, 3), 2**40), positions], dim=1)
        mask = attention_masks(model.config, model.dtype, hidden_mask, positions, key_pos)
        ref = model(seq, position_ids=positions, attention_mask=mask, **with_cache(model, past)).logits
    torch.testing.assert_close(ask[:, -1], ref[:, -1], rtol=1e-5, atol=1e-5)
    assert (ask[:, -1] - expected[:, 0]).abs().max() > 1e-3  # the prefix does change what it sees


def test_given_embeddings_and_positions(model):
    x = tokens(8)
    engine = Engine(model)
    engine.reset(1, 16)
    engine.extend(x[:, :4])
    embed = model.get_input_embeddings()
    with torch.inference_mode():
        same = engine.extend(x[:, 4:], embeds=embed(x[:, 4:])).logits
        full = model(x).logits[:, 4:]
    torch.testing.assert_close(same, full, rtol=1e-5, atol=1e-5)
    engine.rollback(4)
    learned = torch.randn(1, 4, model.config.hidden_size, generator=torch.Generator().manual_seed(2))
    where = torch.tensor([[False, True, False, True]])
    got = engine.extend(
        x[:, 4:], embeds=learned, embeds_mask=where, positions=torch.tensor([[4, 6, 5, 9]])
    ).logits
    with torch.inference_mode():
        inputs = torch.cat([embed(x[:, :4]), torch.where(where[..., None], learned, embed(x[:, 4:]))], dim=1)
        ref = model(inputs_embeds=inputs, position_ids=torch.tensor([[0, 1, 2, 3, 4, 6, 5, 9]])).logits[:, 4:]
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("given", ["embeds", "layer inputs"])
def test_given_inputs_take_the_lean_path_and_equal_the_models_forward(model, monkeypatch, given):
    """BiTA's mask tokens arrive as given embeddings, Tandem's primary states as given layer inputs: the
    lean path runs both (it was skipped for them: through transformers' forward a 6-wide BiTA block cost
    1.22 one-token steps against 1.07 for token ids) and gives bit for bit what the model's forward gives."""
    import specdec.engine.forward as forward_module

    calls = []
    lean = forward_module.lean_forward
    monkeypatch.setattr(forward_module, "lean_forward", lambda *a, **k: calls.append(1) or lean(*a, **k))
    x = tokens(8)
    states = torch.randn(1, 4, model.config.hidden_size, generator=torch.Generator().manual_seed(2))
    where = torch.tensor([[False, True, False, True]])
    tree = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1, 1]], dtype=torch.bool)
    options = (
        {"embeds": states, "embeds_mask": where}
        if given == "embeds"
        else {"layer_inputs": {1: states}, "layer_input_mask": where}
    )
    logits, leans = {}, {}
    for kind in (None, False):
        engine = Engine(model, lean=kind)
        engine.reset(1, 16)
        engine.extend(x[:, :4])
        calls.clear()
        logits[kind] = engine.extend(x[:, 4:], tree_mask=tree, **options).logits
        assert len(calls) == int(engine.lean)  # the models without the lean layout keep their forward
        leans[kind] = engine.lean
    assert leans[False] is False and torch.equal(logits[None], logits[False])
    engine = Engine(model, lean=False)
    engine.reset(1, 16)
    engine.extend(x[:, :4])
    plain = engine.extend(x[:, 4:], tree_mask=tree).logits
    assert not torch.allclose(plain, logits[False])  # the given inputs were used


def test_reserved_slot_errors(model):
    engine = Engine(model)
    with pytest.raises(InvalidArgumentError, match="reserved"):
        engine.reset(1, 8, reserved=-1)
    engine.reset(1, 8)
    with pytest.raises(InvalidArgumentError, match="no reserved slots"):
        engine.write_reserved(prefix_states(model, 2))
    engine.reset(1, 8, reserved=3)
    with pytest.raises(InvalidArgumentError, match="3 slots each"):
        engine.write_reserved(prefix_states(model, 2))


def test_ordinary_tokens_in_a_pass_that_reads_reserved_slots_change_by_rounding_only(model):
    """The half of the bit-for-bit rule that cannot hold: when some queries of a pass see the reserved
    slots, every query's attention spans them (masked), which moves ordinary logits by fp32 rounding."""
    x = tokens(9)
    plain = Engine(model)
    plain.reset(1, 16)
    plain.extend(x[:, :5])
    expected = plain.extend(x[:, 5:]).logits
    engine = Engine(model)
    engine.reset(1, 16, reserved=3)
    engine.write_reserved(prefix_states(model, 3))
    engine.extend(x[:, :5])
    block = torch.cat([x[:, 5:], x[:, :1]], dim=1)  # 4 ordinary tokens, then one that asks
    asks = torch.tensor([[False, False, False, False, True]])
    tree = torch.ones(5, 5, dtype=torch.bool).tril()
    got = engine.extend(block, tree_mask=tree, sees_reserved=asks).logits[:, :4]
    assert (got - expected).abs().max() < 1e-5


def test_a_model_torch_compile_cannot_compile_is_a_clear_error(monkeypatch):
    import specdec.engine.engine as engine_module

    def failing(model, **kwargs):
        def run(*args, **kw):
            raise RuntimeError("inductor lowering failed")

        return run

    monkeypatch.setattr(engine_module.torch, "compile", failing)
    with pytest.raises(InvalidArgumentError, match="compile=False"):
        Engine(make_llama(VOCAB, seed=2), compile=True)
    with pytest.raises(InvalidArgumentError, match="compile=False"):  # compiling in the pipeline's warm-up
        Pipeline(make_llama(VOCAB, seed=2), compile=True)


def test_admitted_rows_match_running_alone_and_leave_the_others_untouched(model):
    """A request admitted into a running batch (whose rows rolled back, so it has holes) gets the logits
    it gets alone; the running rows' next logits are those they get without the newcomer; a released
    row leaves the rest as they were."""
    a, b, c = (tokens(n, seed=s)[0].tolist() for n, s in ((9, 11), (5, 12), (14, 13)))
    engine = Engine(model)
    engine.start([a, b], extra_slots=4)
    engine.extend(torch.tensor([[a[-1], 5, 6], [b[-1], 7, 8]]))
    engine.rollback(torch.tensor([2, 1]))  # a + [], b + [7]
    prefill = engine.admit([c])
    assert engine.batch_size == 3 and engine.num_tokens.tolist() == [9, 6, 13]
    out = engine.extend(torch.tensor([[40], [41], [c[-1]]])).logits[:, 0]
    with torch.inference_mode():
        ref_c = model(torch.tensor([c])).logits[0]
        torch.testing.assert_close(prefill.logits[0, -1], ref_c[-2], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(out[2], ref_c[-1], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            out[0], model(torch.tensor([[*a, 40]])).logits[0, -1], rtol=1e-5, atol=1e-5
        )
        torch.testing.assert_close(
            out[1], model(torch.tensor([[*b, 7, 41]])).logits[0, -1], rtol=1e-5, atol=1e-5
        )
    engine.release([0])
    assert engine.num_tokens.tolist() == [7, 14]
    more = engine.extend(torch.tensor([[42], [43]])).logits[:, 0]
    with torch.inference_mode():
        torch.testing.assert_close(
            more[1], model(torch.tensor([[*c, 43]])).logits[0, -1], rtol=1e-5, atol=1e-5
        )
        want = model(torch.tensor([[*b, 7, 41, 42]])).logits[0, -1]
        torch.testing.assert_close(more[0], want, rtol=1e-5, atol=1e-5)


def test_admission_grows_the_cache_and_copies_reserved_slots(model):
    """A newcomer longer than the running batch's cache grows it, the running row moves right to end with
    it, reserved states reach its row; both rows decode as alone."""
    reserved = prefix_states(model, 2)
    long = tokens(40, seed=14)[0].tolist()
    engine = Engine(model)
    engine.start([long[:3]], extra_slots=1, reserved=2)
    engine.write_reserved(reserved)
    engine.admit([long])
    assert engine.cache.capacity >= 2 + 39 and engine.num_tokens.tolist() == [2, 39]
    for layer, (keys, _) in zip(engine.cache.layers, reserved, strict=True):
        torch.testing.assert_close(layer.keys[1, :, :2], keys[0].to(layer.keys.dtype))
    sees = torch.tensor([[True], [True]])
    both = engine.extend(torch.tensor([[long[2]], [long[39]]]), sees_reserved=sees).logits[:, 0]
    alone = Engine(model)
    alone.start([long], extra_slots=1, reserved=2)
    alone.write_reserved(reserved)
    torch.testing.assert_close(
        both[1], alone.extend(torch.tensor([[long[39]]]), sees_reserved=sees[:1]).logits[0, 0]
    )
    assert int(engine.slots.valid[0].nonzero()[-1]) == engine.slots.length - 1  # moved, not left a gap
    first = Engine(model)
    first.start([long[:3]], extra_slots=1, reserved=2)
    first.write_reserved(reserved)
    torch.testing.assert_close(
        both[0], first.extend(torch.tensor([[long[2]]]), sees_reserved=sees[:1]).logits[0, 0]
    )


def test_admission_needs_a_running_batch(model):
    with pytest.raises(InvalidArgumentError, match="start one first"):
        Engine(model).admit([[1, 2]])
