"""Padded static steps (what a CUDA graph replays) on any device, and the CUDA graphs where a GPU is."""

from collections.abc import Iterator

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.decoders import SpeculativeSampling
from specdec.drafters import ModelDrafter, PromptLookupDrafter, TandemDrafter
from specdec.drafters.bita import BiTADrafter
from specdec.drafters.combined import LookupThenBiTADrafter
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.engine import Engine
from specdec.engine.static_steps import graph_rows
from specdec.errors import InvalidArgumentError
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.pipeline import Pipeline
from tiny import make_eagle3, make_llama, make_oracle_tandem

VOCAB = 320
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")


def _tokens(n: int, rows: int = 1) -> torch.Tensor:
    return torch.randint(3, VOCAB, (rows, n), generator=torch.Generator().manual_seed(0))


def _script(engine: Engine, x: torch.Tensor) -> list[torch.Tensor]:
    """Prefill, one-token steps, a padded-row block, a tree with keep, rollback, growth."""
    tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    pad = torch.tensor([[True, True, True], [True, False, False]])
    engine.reset(2, 16)
    log = [engine.extend(x[:, :10]).logits, engine.extend(x[:, 10:11]).logits]
    log.append(engine.extend(x[:, 11:14], token_mask=pad).logits)
    log.append(engine.extend(x[:, 14:17], tree_mask=tree).logits)
    engine.keep(torch.tensor([[True, False, True], [True, True, False]]))
    engine.rollback(torch.tensor([1, 0]))
    for i in range(17, 90, 4):  # past the first capacity: compaction and growth on the way
        log.append(engine.extend(x[:, i : i + 4], num_logits=2).logits)
        engine.rollback(1)
    log.append(engine.extend(x[:, 90:100]).logits)  # wider than the padded width: eager
    return log


def test_padded_steps_compute_what_eager_steps_compute():
    model = make_llama(VOCAB, seed=2, hidden=64)
    x = _tokens(100, rows=2)
    eager, padded = Engine(model), Engine(model)
    padded.capture_graphs(8, capture=False)
    calls = []
    step = padded.graphs.step
    padded.graphs.step = lambda *args: calls.append(args[0].shape) or step(*args)
    for got, want in zip(_script(padded, x), _script(eager, x), strict=True):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(padded.num_tokens, eager.num_tokens)  # (slots differ: it makes room for 8 a block)
    # Every block but the prefill and the 10-token one ran padded to 8 tokens.
    assert calls and set(calls) == {(2, 8)} and len(calls) == len(_script(eager, x)) - 2


def test_a_token_decoded_alone_or_verified_in_a_block_gets_the_same_logits():
    """The point of one padded width: decode and verify share every product's shape, so the logits
    agree bit for bit (on CPU the packed linears are batch-invariant anyway; on a GPU this is what
    keeps cuBLAS from choosing a different kernel for one row than for five)."""
    model = make_llama(VOCAB, seed=3, hidden=64)
    x = _tokens(16)
    one, block = Engine(model), Engine(model)
    for engine in (one, block):
        engine.capture_graphs(8, capture=False)
        engine.reset(1, 16)
        engine.extend(x[:, :10])
    stepped = torch.cat([one.extend(x[:, i : i + 1]).logits for i in range(10, 16)], dim=1)
    assert torch.equal(block.extend(x[:, 10:16]).logits, stepped)


def _hidden_script(engine: Engine, x: torch.Tensor, layers: tuple[int, ...]) -> list:
    """A prefill, then one-token steps, a tree and a 4-token block, each asking for ``layers``."""
    tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    engine.reset(2, 16)
    outs = [engine.extend(x[:, :10], hidden_layers=layers), engine.extend(x[:, 10:11], hidden_layers=layers)]
    outs.append(engine.extend(x[:, 11:14], tree_mask=tree, hidden_layers=layers))
    engine.keep(torch.tensor([[True, False, True], [True, True, False]]))
    outs += [engine.extend(x[:, 14:18], hidden_layers=layers), engine.extend(x[:, 18:19])]
    return outs


def test_padded_steps_return_the_hidden_states_eager_steps_return():
    """A drafter reading the target's states (EAGLE-3, Tandem) asks for them at every verify: the padded
    step (what a CUDA graph replays) returns them, cut to the block's rows and tokens, one step kind per
    set of layers."""
    model = make_llama(VOCAB, seed=2, hidden=64, layers=4)
    x = _tokens(20, rows=2)
    eager, padded = Engine(model), Engine(model)
    padded.capture_graphs(8, capture=False)
    calls = []
    step = padded.graphs.step
    padded.graphs.step = lambda *args: calls.append((tuple(args[0].shape), args[4])) or step(*args)
    layers = (0, 2, 4)
    for got, want in zip(_hidden_script(padded, x, layers), _hidden_script(eager, x, layers), strict=True):
        torch.testing.assert_close(got.logits, want.logits, rtol=1e-5, atol=1e-5)
        assert got.hidden_states.keys() == want.hidden_states.keys()
        for i, h in want.hidden_states.items():
            assert got.hidden_states[i].shape == h.shape
            torch.testing.assert_close(got.hidden_states[i], h, rtol=1e-5, atol=1e-5)
    # Every block after the prefill ran padded, with the layers asked for (none for the last one).
    assert calls == [((2, 8), layers)] * 3 + [((2, 8), ())]


def test_speculative_decoding_on_padded_engines_is_lossless(tiny_tokenizer):
    target = make_llama(len(tiny_tokenizer), seed=0, layers=3)
    drafter = ModelDrafter(make_llama(len(tiny_tokenizer), seed=7), tiny_tokenizer)
    pipe = Pipeline(target, tiny_tokenizer)
    plain = pipe.generate(["the quick brown fox"], method="plain", max_new_tokens=30)
    pipe.engine.capture_graphs(capture=False)
    drafter.engine.capture_graphs(capture=False)
    for draft in (drafter, PromptLookupDrafter()):
        for method in ("plain", SpeculativeSampling(4), SpeculativeSampling("adaptive")):
            out = pipe.with_drafter(draft).generate(["the quick brown fox"], method=method, max_new_tokens=30)
            assert out.token_ids == plain.token_ids


def test_drafters_reading_the_targets_states_stay_lossless_on_padded_engines(tiny_tokenizer):
    """EAGLE-3 and Tandem verify through the padded step with hidden states; an oracle Tandem secondary
    (the target itself) is accepted at every position only if those states reach it right."""
    target = make_llama(len(tiny_tokenizer), seed=0, layers=4)
    pipe = Pipeline(target, tiny_tokenizer)
    plain = pipe.generate(["the quick brown fox"], method="plain", max_new_tokens=30)
    pipe.engine.capture_graphs(capture=False)
    calls = []
    step = pipe.engine.graphs.step
    pipe.engine.graphs.step = lambda *args: calls.append(args[4]) or step(*args)
    oracle = TandemDrafter(make_oracle_tandem(target), tiny_tokenizer)
    head = make_eagle3(target)
    dynamic = Eagle3Drafter(head.head, head.embeddings, tree_width=2, dynamic=True)  # a new shape each step
    for draft in (head, dynamic, oracle):
        calls.clear()
        out = pipe.with_drafter(draft).generate(
            ["the quick brown fox"], method=SpeculativeSampling(4), max_new_tokens=30
        )
        assert out.token_ids == plain.token_ids
        assert calls and all(calls)  # every verify ran padded and returned the drafter's states
    assert out.stats.acceptance_rate == 1.0


@pytest.mark.parametrize("kind", ["deep", "none"])
@pytest.mark.parametrize("shape", ["straight", "efficient"])
def test_bita_verifies_through_padded_steps_with_its_mask_embeddings_and_stays_lossless(
    tiny_tokenizer, kind, shape
):
    """BiTA's verify blocks carry learned mask-token embeddings (and, deep, see the reserved prompt
    slots): the padded step takes the embeddings as an input, so those blocks replay a graph too."""
    target = make_llama(len(tiny_tokenizer), seed=0, layers=4)
    pipe = Pipeline(target, tiny_tokenizer)
    plain = pipe.generate(["the quick brown fox", "def add(a, b):"], method="plain", max_new_tokens=24)
    pipe.engine.capture_graphs(capture=False)
    given, asked = [], []  # padded steps that got embeddings; blocks that came with them
    step, extend = pipe.engine.graphs.step, pipe.engine.extend
    pipe.engine.graphs.step = lambda *args: given.append(args[-1] is not None) or step(*args)
    fits = pipe.engine.graphs.width  # a wider block (the efficient tree and its masks) runs eagerly
    pipe.engine.extend = lambda *a, **k: (
        asked.append(k.get("embeds") is not None and a[0].shape[1] <= fits) or extend(*a, **k)
    )
    torch.manual_seed(0)
    adapter = BiTAAdapter(model_signature(target), 4 if kind == "deep" else 0, 3, kind).eval()
    out = pipe.with_drafter(BiTADrafter(adapter, shape)).generate(
        ["the quick brown fox", "def add(a, b):"], method=SpeculativeSampling(6), max_new_tokens=24
    )
    assert out.token_ids == plain.token_ids
    # Every block that came with mask embeddings and fits the width ran padded with them.
    assert given.count(True) == asked.count(True) and (shape == "efficient" or any(asked))


def test_padded_steps_with_given_embeddings_compute_what_eager_steps_compute():
    model = make_llama(VOCAB, seed=2, hidden=64)
    x = _tokens(20, rows=2)
    embeds = torch.randn(2, 4, 64, generator=torch.Generator().manual_seed(1))
    where = torch.tensor([[False, True, True, False], [False, False, True, True]])
    outs = []
    for engine in (Engine(model), Engine(model)):
        if outs:
            engine.capture_graphs(8, capture=False)
        engine.reset(2, 16)
        engine.extend(x[:, :10])
        outs.append(engine.extend(x[:, 10:14], embeds=embeds, embeds_mask=where, hidden_layers=(1,)))
    eager, padded = outs
    torch.testing.assert_close(padded.logits, eager.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(padded.hidden_states[1], eager.hidden_states[1], rtol=1e-5, atol=1e-5)
    # A control: the embeddings changed the result (the padded step did not ignore them).
    plain = Engine(model)
    plain.reset(2, 16)
    plain.extend(x[:, :10])
    assert not torch.allclose(plain.extend(x[:, 10:14]).logits, eager.logits)


def test_graphed_engines_keep_their_cache_buffers_across_batches_of_one_shape():
    engine = Engine(make_llama(VOCAB, seed=1))
    engine.capture_graphs(4, capture=False)
    engine.reset(1, 10)
    assert engine.cache.capacity == 64  # rounded up: fewer shapes to capture
    engine.extend(_tokens(5))
    cache = engine.cache
    engine.reset(1, 30)
    assert engine.cache is cache and engine.slots.length == 0 and not engine.slots.valid.any()
    engine.reset(2, 30)  # another batch size: new buffers
    assert engine.cache is not cache


def test_bad_graph_settings_are_clear_errors():
    engine = Engine(make_llama(VOCAB, seed=1))
    for width in (0, 17, True, 2.0):
        with pytest.raises(InvalidArgumentError, match="graph width"):
            engine.capture_graphs(width, capture=False)
    if not torch.cuda.is_available():
        with pytest.raises(InvalidArgumentError, match="CUDA device"):
            engine.capture_graphs(capture=True)


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_graph_replays_compute_what_the_padded_steps_compute(dtype):
    model = make_llama(VOCAB, seed=2, hidden=64).to("cuda", dtype)
    x = _tokens(100, rows=2)
    padded, graphed = Engine(model), Engine(model)
    padded.capture_graphs(8, capture=False)
    graphed.capture_graphs(8)
    for got, want in zip(_script(graphed, x), _script(padded, x), strict=True):
        assert torch.equal(got, want)
    assert graphed.graphs.graphs  # it did capture


@cuda
def test_graph_replays_return_the_hidden_states_the_padded_steps_return():
    model = make_llama(VOCAB, seed=2, hidden=64, layers=4).to("cuda")
    x = _tokens(20, rows=2)
    padded, graphed = Engine(model), Engine(model)
    padded.capture_graphs(8, capture=False)
    graphed.capture_graphs(8)
    for got, want in zip(
        _hidden_script(graphed, x, (0, 2, 4)), _hidden_script(padded, x, (0, 2, 4)), strict=True
    ):
        assert torch.equal(got.logits, want.logits)
        assert all(torch.equal(got.hidden_states[i], h) for i, h in want.hidden_states.items())
    assert {key[-1] for key in graphed.graphs.graphs} == {(0, 2, 4), ()}  # one graph per set of layers


@cuda
def test_compile_on_cuda_means_graphs_and_bf16_greedy_stays_lossless(tiny_tokenizer):
    target = make_llama(len(tiny_tokenizer), seed=0, layers=3).to("cuda", torch.bfloat16)
    draft = make_llama(len(tiny_tokenizer), seed=7).to("cuda", torch.bfloat16)
    drafter = ModelDrafter(draft, tiny_tokenizer)
    drafter.engine.capture_graphs()
    pipe = Pipeline(target, tiny_tokenizer, compile=True)
    assert pipe.engine.graphs is not None and pipe.engine.graphs.capture
    prompts = ["the quick brown fox", "def add(a, b):"]
    plain = pipe.generate(prompts, method="plain", max_new_tokens=40)
    for draft in (drafter, PromptLookupDrafter()):
        out = pipe.with_drafter(draft).generate(prompts, method=SpeculativeSampling(4), max_new_tokens=40)
        assert out.token_ids == plain.token_ids


def test_rounded_read_lengths_change_nothing_but_the_shapes(tiny_tokenizer):
    """Reading a multiple of ``read_bucket`` slots (free ones masked out, as CUDA engines do so that
    attention sees few distinct shapes) computes what exact-length reads compute."""
    model = make_llama(VOCAB, seed=2, hidden=64)
    x = _tokens(100, rows=2)
    exact, rounded = Engine(model), Engine(model)
    rounded.read_bucket = 16
    for got, want in zip(_script(rounded, x), _script(exact, x), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    cache = rounded.cache  # the last block's read: rounded up past its end
    assert (cache.read_end - cache.read_start) % 16 == 0 and cache.read_end > rounded.slots.length
    target = make_llama(len(tiny_tokenizer), seed=0, layers=3)
    pipe, reference = Pipeline(target, tiny_tokenizer), Pipeline(target, tiny_tokenizer)
    pipe.engine.read_bucket = 16
    plain = reference.generate(["the quick brown fox"], method="plain", max_new_tokens=30)
    for method in ("plain", SpeculativeSampling(4)):
        out = pipe.with_drafter(PromptLookupDrafter()).generate(
            ["the quick brown fox"], method=method, max_new_tokens=30
        )
        assert out.token_ids == plain.token_ids


def test_a_compiled_padded_step_does_not_recompile_when_the_capacity_changes():
    """The warm-up's capacity must not equal another input size (here the 64-wide head): dynamo's
    duck sizing would tie the two and recompile at the first real capacity."""
    from torch._dynamo.utils import counters

    model = make_llama(VOCAB, seed=0, hidden=256)  # 4 heads of 64
    model.config.max_position_embeddings = 1024
    pipe = Pipeline(model)
    pipe.engine.capture_graphs(capture=False, compile=True)
    graphs = counters["stats"]["unique_graphs"]
    capacities = set()
    for n in (10, 60, 200):
        pipe.generate([3 + i % 300 for i in range(n)], method="plain", max_new_tokens=8)
        capacities.add(pipe.engine.cache.capacity)
    assert capacities == {64, 128, 256}
    assert counters["stats"]["unique_graphs"] == graphs


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5000))
def test_graph_rows_are_the_power_of_two_bucket_of_a_batch(batch):
    rows = graph_rows(batch)
    assert rows & (rows - 1) == 0 and batch <= rows < 2 * batch


def _buffers(engine: Engine) -> list[int]:
    return [t.data_ptr() for layer in engine.cache.layers for t in (layer.keys, layer.values)]


def _rows_come_and_go(engine: Engine, x: torch.Tensor) -> Iterator[torch.Tensor]:
    """Three rows decode; one leaves, the holes are compacted away, two join (four rows: the buffers of
    the bucket of four still hold them). Yields each step's logits as it runs, so a caller can look at
    the engine between steps."""
    engine.start([x[0, :6].tolist(), x[1, :9].tolist(), x[2, :4].tolist()], extra_slots=8)
    yield engine.extend(x[:3, 20:21]).logits
    yield engine.extend(x[:3, 21:25]).logits
    engine.rollback(torch.tensor([2, 0, 1]))
    engine.release([1])
    engine.compact()
    yield engine.extend(x[:2, 25:28]).logits
    engine.admit([x[3, :7].tolist(), x[4, :5].tolist()])
    yield engine.extend(x[:4, 28:30]).logits


def test_rows_join_and_leave_a_graphed_batch_in_place_under_its_bucket_graphs():
    """Releasing, compacting and admitting within the buffers' rows keep the cache buffers where the
    graphs read them (no graph dropped) and compute what the eager engine computes; each step runs at
    its batch-size bucket's rows. A row past the buffers' rows reallocates them (the graphs go)."""
    model = make_llama(VOCAB, seed=2, hidden=64)
    x = _tokens(40, rows=6)
    eager, padded = Engine(model), Engine(model)
    padded.capture_graphs(8, capture=False)
    calls, dropped = [], []
    step = padded.graphs.step
    padded.graphs.step = lambda *args: calls.append(tuple(args[0].shape)) or step(*args)
    clear = padded.graphs.clear
    padded.graphs.clear = lambda: dropped.append(True) or clear()
    seen = []  # after each step: where the buffers are, and how many times graphs were dropped
    for got, want in zip(_rows_come_and_go(padded, x), _rows_come_and_go(eager, x), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        seen.append((_buffers(padded), len(dropped)))
    buffers = seen[0][0]  # the buffers the first step's graphs read
    assert all(s == (buffers, seen[0][1]) for s in seen)  # rows came and went in place, nothing dropped
    # Each step at its bucket's rows (3 live rows: 4; 2: 2; 4: 4), over the same buffers of 4 rows.
    assert [rows for rows, _ in calls] == [4, 4, 2, 4] and padded.cache.allocated_rows == 4
    padded.admit([x[5, :3].tolist()])  # a fifth row: the next bucket, new buffers
    assert _buffers(padded) != buffers and dropped and padded.cache.allocated_rows == 8
    eager.admit([x[5, :3].tolist()])
    torch.testing.assert_close(
        padded.extend(x[:5, 30:31]).logits, eager.extend(x[:5, 30:31]).logits, rtol=1e-5, atol=1e-5
    )
    assert calls[-1] == (8, 8)


@cuda
def test_graph_replays_stay_right_as_rows_join_and_leave_in_place():
    model = make_llama(VOCAB, seed=2, hidden=64).to("cuda")
    x = _tokens(40, rows=6)
    padded, graphed = Engine(model), Engine(model)
    padded.capture_graphs(8, capture=False)
    graphed.capture_graphs(8)
    for got, want in zip(_rows_come_and_go(graphed, x), _rows_come_and_go(padded, x), strict=True):
        assert torch.equal(got, want)
    assert len(graphed.graphs.graphs) >= 2  # the buckets of 4 and 2 rows, over the same buffers


def test_a_compiled_pipeline_compiles_what_one_prompt_with_its_drafter_meets():
    """Built compiled, a pipeline whose drafter reads the target's hidden states compiles those steps
    then (not the plain ones its requests never run), and generating a prompt compiles nothing more."""
    from torch._dynamo.utils import counters

    target = make_llama(VOCAB, seed=0, layers=4)
    torch._dynamo.reset()  # what this pipeline compiles, not what another test left cached
    counters.clear()
    pipe = Pipeline(target, drafter=make_eagle3(target), compile=True)
    graphs = counters["stats"]["unique_graphs"]
    for method in (SpeculativeSampling(3), SpeculativeSampling("adaptive")):  # blocks, one-token steps
        pipe.generate([3 + i % 300 for i in range(20)], method=method, max_new_tokens=24)
    assert counters["stats"]["unique_graphs"] == graphs
    # Each step is one whole graph: no break (a break splits it and runs what lies between eagerly).
    assert not counters["graph_break"], dict(counters["graph_break"])


@pytest.mark.parametrize("lookup", [False, True])
def test_a_compiled_bita_pipeline_compiles_its_mask_blocks_up_front_and_stays_lossless(lookup):
    """BiTA's verify blocks carry mask tokens by their embeddings: a compiled CPU engine runs them
    through a graph of their own, compiled when the pipeline is built, and greedy output stays plain
    decoding's (fp32: the graphs' logits equal the eager engine's to rounding). With prompt lookup in
    front (a repeated prompt: lookup steps), its chains and their masks, wider blocks, take that graph too."""
    from torch._dynamo.utils import counters

    target = make_llama(VOCAB, seed=0, layers=2)
    torch.manual_seed(3)
    adapter = BiTAAdapter(model_signature(target), 4, 3, "deep")
    prompt = [3 + (7 * i) % 300 for i in range(20)] * (2 if lookup else 1)
    plain = Pipeline(target).generate(prompt, method="plain", max_new_tokens=24).token_ids
    torch._dynamo.reset()
    counters.clear()
    drafter = BiTADrafter(adapter, "2")
    drafter = LookupThenBiTADrafter(drafter) if lookup else drafter
    pipe = Pipeline(target, drafter=drafter, compile=True)
    graphs = counters["stats"]["unique_graphs"]
    runner, embedded = pipe.engine.compiled, []

    def counted(*args, **kwargs):
        embeds = kwargs.get("inputs_embeds")
        embedded.append(0 if embeds is None else embeds.shape[1])
        return runner(*args, **kwargs)

    pipe.engine.compiled = counted
    out = pipe.generate(prompt, method=SpeculativeSampling(3), max_new_tokens=24)
    assert out.token_ids == plain and any(embedded)  # mask blocks ran compiled
    # a tree step's block is 6 wide at the shape `2`; a lookup chain's with its masks up to 10
    assert (max(embedded) > 6) == lookup
    assert counters["stats"]["unique_graphs"] == graphs, "a graph compiled while generating"
    assert not lookup or drafter.lookup_steps > 0
