"""Derived copies of a model: they share what they don't change and never modify the original."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.errors import InvalidArgumentError, VocabularyMismatchError
from specdec.models import (
    check_same_vocabulary,
    check_truncation,
    decoder_layers,
    output_vocab_size,
    reduced_precision_copy,
    truncated_copy,
)
from specdec.models.surgery import Int8Linear
from tiny import make_gpt2, make_llama, make_tokenizer


def test_derived_drafts_leave_the_target_untouched():
    tok = make_tokenizer()
    target = make_llama(len(tok), layers=4)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    int8, bf16 = reduced_precision_copy(target, "int8"), reduced_precision_copy(target, "bf16")
    short = truncated_copy(target, 2)
    assert type(target.lm_head) is torch.nn.Linear and type(int8.lm_head) is not torch.nn.Linear
    assert bf16.lm_head.weight.dtype == torch.bfloat16
    assert short.config.num_hidden_layers == 2 and len(short.model.layers) == 2
    assert target.config.num_hidden_layers == 4 and len(target.model.layers) == 4
    assert short.model.embed_tokens.weight is target.model.embed_tokens.weight  # shared, not copied
    after = target.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    x = torch.tensor([[5, 6, 7]])
    with torch.inference_mode():
        assert short(x).logits.shape == target(x).logits.shape
        torch.testing.assert_close(int8(x).logits, target(x).logits, atol=0.5, rtol=0.1)


def test_decoder_layers_of_each_architecture():
    assert len(decoder_layers(make_llama(50, layers=3))) == 3
    assert len(decoder_layers(make_gpt2(50, layers=2))) == 2
    with pytest.raises(InvalidArgumentError, match="decoder layers"):
        decoder_layers(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("layers", [0, 4, -1, 2.0, True])
def test_truncation_keeps_at_least_one_layer_and_drops_one(layers):
    with pytest.raises(InvalidArgumentError, match="num_layers"):
        check_truncation(make_llama(50, layers=4), layers)


def test_vocabulary_checks():
    tok = make_tokenizer()
    model = make_llama(len(tok))
    assert output_vocab_size(model) == len(tok)
    check_same_vocabulary(model, tok, make_gpt2(len(tok)), tok)
    with pytest.raises(VocabularyMismatchError, match="320 token ids but the draft predicts 400"):
        check_same_vocabulary(model, tok, make_gpt2(400), None)
    other = make_tokenizer()
    other.add_tokens(["<extra>"])  # same model vocab size, different id mapping
    with pytest.raises(VocabularyMismatchError, match="tokenizers"):
        check_same_vocabulary(model, tok, make_llama(len(tok)), other)


SMALL = make_llama(len(make_tokenizer()), layers=2)
SMALL_INT8 = reduced_precision_copy(SMALL, "int8")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_an_int8_copy_calls_the_quantised_kernel_directly_with_the_same_bits(rows, width, seed):
    """``Int8Linear`` is the dynamically quantised module's own op on its own packed weight: bitwise its
    output, for one row or many (a draft step's 1, a verify or catch-up block's several)."""
    wrapped = [m for m in SMALL_INT8.modules() if isinstance(m, Int8Linear)]
    linears = [m for m in SMALL.modules() if type(m) is torch.nn.Linear]
    assert len(wrapped) == len(linears) and not any(type(m) is torch.nn.Linear for m in SMALL_INT8.modules())
    generator = torch.Generator().manual_seed(seed)
    with torch.inference_mode():
        for module in wrapped:
            x = torch.randn(rows, width, module.in_features, generator=generator) * 3
            assert torch.equal(module(x), module.quantized(x))
            assert module(x).shape == (rows, width, module.out_features)


def test_int8_linear_takes_only_qint8_linears():
    half = torch.ao.quantization.quantize_dynamic(
        torch.nn.Sequential(torch.nn.Linear(8, 4)), {torch.nn.Linear}, dtype=torch.float16
    )[0]
    with pytest.raises(InvalidArgumentError, match="qint8"):
        Int8Linear(half)
