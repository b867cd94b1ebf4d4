"""The lean forward: used only where it reproduces the model's own logits bit for bit."""

import pytest
import torch
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from specdec.engine import Engine, SlotCache
from specdec.engine.lean import lean_forward
from specdec.engine.modeling import attention_masks
from specdec.errors import InvalidArgumentError
from tiny import make_gpt2, make_llama

VOCAB = 320
SMALL = {"vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
HEADS = {"num_attention_heads": 4, "num_key_value_heads": 2}


def sdpa(model):
    model.config._attn_implementation = "sdpa"
    return model.eval()


def mistral():
    torch.manual_seed(0)
    return sdpa(MistralForCausalLM(MistralConfig(**SMALL, **HEADS, sliding_window=4)))


def qwen2_mixed_layers():
    """One full-attention and one sliding-window layer: a mask per layer type."""
    torch.manual_seed(0)
    config = Qwen2Config(**SMALL, **HEADS, use_sliding_window=True, sliding_window=4, max_window_layers=1)
    assert config.layer_types == ["full_attention", "sliding_attention"]
    return sdpa(Qwen2ForCausalLM(config))


LEAN_MODELS = {
    "llama": lambda: make_llama(VOCAB, seed=1),
    "llama-eager": lambda: make_llama(VOCAB, seed=1, attn="eager"),
    "mistral": mistral,
    "qwen2-mixed": qwen2_mixed_layers,
}


class CappedLlama(LlamaForCausalLM):
    """A forward that does more than its modules (logit soft-capping): the lean driver would miss it."""

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        out.logits = 30.0 * torch.tanh(out.logits / 30.0)
        return out


def llama_as(cls: type[LlamaForCausalLM]) -> LlamaForCausalLM:
    """The tiny Llama's weights in a subclass whose forward does something of its own."""
    reference = make_llama(VOCAB, seed=1)
    model = cls(reference.config)
    model.load_state_dict(reference.state_dict())
    return model.eval()


def capped_llama():
    return llama_as(CappedLlama)


def gemma2():
    torch.manual_seed(0)
    config = Gemma2Config(**SMALL, **HEADS, head_dim=8, sliding_window=4, attn_logit_softcapping=None)
    return sdpa(Gemma2ForCausalLM(config))


@pytest.mark.parametrize("name", list(LEAN_MODELS))
def test_lean_engine_is_bitwise_the_model_forward_engine(name):
    """Prefill of padded rows, a tree block, rollback, growth: every logit equal to the standard path."""
    model = LEAN_MODELS[name]()
    engines = [Engine(model), Engine(model, lean=False)]
    assert [e.lean for e in engines] == [True, False]
    gen = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, VOCAB, (n,), generator=gen).tolist() for n in (7, 4)]
    tree = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    outputs = []
    for engine in engines:
        engine.reset(2, 8)  # small: the blocks below make it grow
        logits = [engine.prefill(prompts).logits]
        logits.append(engine.extend(torch.tensor([[5, 6, 7], [8, 9, 10]]), tree_mask=tree).logits)
        engine.keep(torch.tensor([[True, True, False], [True, False, True]]))
        logits.append(engine.extend(torch.tensor([[11, 12, 13, 14], [15, 16, 17, 18]])).logits)
        engine.rollback(torch.tensor([3, 1]))
        for step in range(6):
            logits.append(engine.extend(torch.tensor([[20 + step], [40 + step]])).logits)
        outputs.append(logits)
    for lean, standard in zip(*outputs, strict=True):
        assert torch.equal(lean, standard)


class ScaledStatesLlama(LlamaForCausalLM):
    """Logits as Llama's, hidden states reported otherwise (doubled): the lean driver's would differ."""

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        if out.hidden_states is not None:
            out.hidden_states = tuple(2.0 * h for h in out.hidden_states)
        return out


def hidden_blocks(model, lean: bool | None) -> list:
    """A prefill and a block asking for every hidden state (embeddings, layer 1, the final norm's)."""
    x = torch.randint(3, VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    engine = Engine(model, lean=lean)
    engine.reset(2, 16)
    layers = (0, 1, 2)
    return [
        engine.prefill(x[:, :5].tolist(), hidden_layers=layers),
        engine.extend(x[:, 5:], hidden_layers=layers),
    ]


def test_hidden_states_on_the_lean_path_are_the_model_forwards():
    """EAGLE-3 and Tandem read hidden states from every verify pass: the lean path returns them, in
    transformers' numbering, bit for bit."""
    model = make_llama(VOCAB, seed=1)
    assert Engine(model).lean_hidden
    for lean, own in zip(hidden_blocks(model, None), hidden_blocks(model, False), strict=True):
        assert torch.equal(lean.logits, own.logits)
        assert set(lean.hidden_states) == {0, 1, 2}
        for layer in (0, 1, 2):
            assert torch.equal(lean.hidden_states[layer], own.hidden_states[layer])


def test_blocks_asking_for_hidden_states_run_the_lean_forward(monkeypatch):
    """The routing itself (both paths give the same numbers, so equality alone cannot show it): with the
    probe passed, a block that asks for hidden states, negative indices included, goes the lean way."""
    import specdec.engine.forward as forward_module

    asked = []

    def spy(*args, **kwargs):
        asked.append(args[6] if len(args) > 6 else kwargs.get("hidden_layers", ()))
        return lean_forward(*args, **kwargs)

    monkeypatch.setattr(forward_module, "lean_forward", spy)
    model = make_llama(VOCAB, seed=1)
    x = torch.randint(3, VOCAB, (1, 9), generator=torch.Generator().manual_seed(0))
    engine = Engine(model)
    engine.reset(1, 16)
    engine.extend(x[:, :5])
    out = engine.extend(x[:, 5:], hidden_layers=(1, -1))
    assert list(asked[-1]) == [1, -1]
    reference = Engine(model, lean=False)
    reference.reset(1, 16)
    reference.extend(x[:, :5])
    own = reference.extend(x[:, 5:], hidden_layers=(1, -1))
    for layer in (1, -1):
        assert torch.equal(out.hidden_states[layer], own.hidden_states[layer])


def test_hidden_states_reported_otherwise_take_the_model_forward():
    """Negative control: logits match, hidden states do not: plain blocks stay lean, blocks that ask
    for hidden states get the model's own (here doubled), which the lean driver would not give."""
    model = llama_as(ScaledStatesLlama)
    engine = Engine(model)
    assert engine.lean and not engine.lean_hidden
    reference = make_llama(VOCAB, seed=1)
    for mine, plain in zip(hidden_blocks(model, None), hidden_blocks(reference, None), strict=True):
        for layer in (0, 1, 2):
            assert torch.equal(mine.hidden_states[layer], 2.0 * plain.hidden_states[layer])


@pytest.mark.parametrize("build", [capped_llama, gemma2, lambda: make_gpt2(VOCAB, seed=1)])
def test_models_it_does_not_reproduce_keep_their_forward(build):
    """Negative controls: a forward with extra maths (soft-capping: our subclass, Gemma 2), another
    layout (GPT-2). The check must reject them, and the engine then matches the model's own forward."""
    model = build()
    engine = Engine(model)
    assert engine.lean is False
    with pytest.raises(InvalidArgumentError, match="lean forward"):
        Engine(model, lean=True)
    x = torch.randint(3, VOCAB, (1, 6), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        full = model(x).logits
    engine.reset(1, 8)
    torch.testing.assert_close(engine.extend(x).logits, full, rtol=1e-5, atol=1e-5)


def test_capped_llama_differs_from_its_lean_forward():
    """The negative control is real: unchecked, the lean driver would return other logits for it."""
    model = capped_llama()
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool).tril()
    x, positions = torch.tensor([[5, 6, 7, 8]]), torch.arange(4)[None]
    masks = attention_masks(model.config, model.dtype, mask, positions, positions)
    with torch.inference_mode():
        lean = lean_forward(model, x, positions, masks, SlotCache(2, 4)).logits
        own = model(input_ids=x, position_ids=positions, attention_mask=masks).logits
    assert not torch.equal(lean, own)
