"""The EAGLE-3 head module: a widened head drafts exactly as the head it was widened from, and keeps the
layout vLLM loads (only ``intermediate_size`` changes)."""

import pytest
import torch

from specdec.errors import InvalidArgumentError
from specdec.models.eagle3 import widened
from specdec.models.eagle3_layout import load_head, save_head
from tiny import make_eagle3_head, make_llama, make_tokenizer

TOK = make_tokenizer()
TARGET = make_llama(len(TOK), seed=0, layers=4)
VERIFIER = {"name_or_path": "tiny", "architectures": []}


def head_outputs(head, seed: int = 0) -> list[torch.Tensor]:
    """Logits, pre-norm features, keys and values of a block of 6 pairs after 5 cached ones."""
    generator = torch.Generator().manual_seed(seed)
    width = head.config.hidden_size
    embeds, features = (torch.randn(1, 11, width, generator=generator) for _ in range(2))
    positions = torch.arange(11)[None]
    causal = torch.ones(11, 11, dtype=torch.bool).tril()[None, None]
    with torch.no_grad():
        first = head(embeds[:, :5], features[:, :5], positions[:, :5], causal[..., :5, :5])
        out = head(
            embeds[:, 5:], features[:, 5:], positions[:, 5:], causal[..., 5:, :], (first.keys, first.values)
        )
    return [out.logits, out.prenorm, out.keys, out.values]


def test_a_widened_head_computes_what_it_computed_before():
    head = make_eagle3_head(TARGET, draft_ids=torch.arange(0, len(TOK), 3))
    wide = widened(head, 3 * head.config.intermediate_size, seed=1)
    assert wide.layers[0].mlp.gate_proj.out_features == 3 * head.config.intermediate_size
    assert wide.config.intermediate_size == 3 * head.config.intermediate_size
    assert head.config.intermediate_size == 2 * head.config.hidden_size  # the original is untouched
    for before, after in zip(head_outputs(head), head_outputs(wide), strict=True):
        torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-5)
    assert torch.equal(wide.draft_ids, head.draft_ids)
    new_units = wide.layers[0].mlp.gate_proj.weight[head.config.intermediate_size :]
    assert new_units.abs().sum() > 0  # random, so training can move them once the zero outputs move


def test_negative_control_new_units_with_nonzero_outputs_change_the_head():
    head = make_eagle3_head(TARGET)
    wide = widened(head, 2 * head.config.intermediate_size)
    with torch.no_grad():
        wide.layers[0].mlp.down_proj.weight[:, head.config.intermediate_size :].normal_()
    assert not torch.allclose(head_outputs(wide)[0], head_outputs(head)[0], atol=1e-3)


def test_a_widened_head_saves_and_loads_in_the_served_layout(tmp_path):
    head = make_eagle3_head(TARGET)
    wide = widened(head, 96)
    folder = save_head(wide, tmp_path / "wide", VERIFIER)
    back = load_head(folder)
    assert back.config.intermediate_size == 96
    for before, after in zip(head_outputs(wide), head_outputs(back), strict=True):
        assert torch.equal(before, after)


def test_a_head_is_only_widened():
    head = make_eagle3_head(TARGET)
    with pytest.raises(InvalidArgumentError, match="widen it to more"):
        widened(head, head.config.intermediate_size)
