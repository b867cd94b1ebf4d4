"""The EAGLE-3 head module: a widened head drafts exactly as the head it was widened from, and keeps the
layout vLLM loads (only ``intermediate_size`` changes); a head given a wider draft vocabulary keeps its
trained rows and places the new ones through the map from the target's output rows."""

import pytest
import torch

from specdec.errors import InvalidArgumentError
from specdec.models.eagle3 import widened, with_vocabulary
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


OUTPUT_ROWS = TARGET.get_output_embeddings().weight


def test_a_wider_vocabulary_keeps_the_trained_rows_and_maps_the_target_rows_of_new_tokens():
    """If the trained rows are exactly the target's rows through some linear map, the new tokens' rows are
    the target's rows through that same map (least squares recovers it), and the old logits are unchanged."""
    vocab = len(TOK)
    head = make_eagle3_head(TARGET, draft_ids=torch.arange(0, vocab, 2))
    mapping = torch.randn(
        OUTPUT_ROWS.shape[1], head.config.hidden_size, generator=torch.Generator().manual_seed(3)
    )
    with torch.no_grad():
        head.lm_head.weight.copy_(OUTPUT_ROWS[head.draft_ids] @ mapping)
    wide = with_vocabulary(head, torch.arange(vocab), OUTPUT_ROWS)
    assert len(wide.d2t) == vocab and torch.equal(wide.draft_ids, torch.arange(vocab))
    torch.testing.assert_close(wide.lm_head.weight, OUTPUT_ROWS @ mapping, rtol=1e-3, atol=1e-3)
    before, after = head_outputs(head)[0], head_outputs(wide)[0]
    assert torch.equal(after[..., head.draft_ids], before)  # the trained rows, bit for bit
    for a, b in zip(head_outputs(head)[1:], head_outputs(wide)[1:], strict=True):
        assert torch.equal(a, b)  # nothing but the output head changed


def test_a_head_with_a_wider_vocabulary_saves_and_loads_it(tmp_path):
    head = make_eagle3_head(TARGET, draft_ids=torch.arange(0, len(TOK), 4))
    wide = with_vocabulary(head, torch.arange(0, len(TOK), 2), OUTPUT_ROWS)
    back = load_head(save_head(wide, tmp_path / "wide", VERIFIER))
    assert torch.equal(back.draft_ids, torch.arange(0, len(TOK), 2))
    assert torch.equal(head_outputs(back)[0], head_outputs(wide)[0])


def test_negative_control_random_new_rows_do_not_follow_the_map():
    head = make_eagle3_head(TARGET, draft_ids=torch.arange(0, len(TOK), 2))
    mapping = torch.randn(OUTPUT_ROWS.shape[1], head.config.hidden_size)
    with torch.no_grad():
        head.lm_head.weight.copy_(OUTPUT_ROWS[head.draft_ids] @ mapping)
    wide = with_vocabulary(head, torch.arange(len(TOK)), OUTPUT_ROWS)
    with torch.no_grad():
        wide.lm_head.weight[1::2].normal_()
    assert not torch.allclose(wide.lm_head.weight, OUTPUT_ROWS @ mapping, atol=1e-2)


def test_a_vocabulary_is_only_widened_and_keeps_the_heads_tokens():
    head = make_eagle3_head(TARGET, draft_ids=torch.arange(0, len(TOK), 2))
    with pytest.raises(InvalidArgumentError, match="widen it to more"):
        with_vocabulary(head, head.draft_ids, OUTPUT_ROWS)
    with pytest.raises(InvalidArgumentError, match="keeps every token"):
        with_vocabulary(head, torch.arange(1, len(TOK)), OUTPUT_ROWS)


def test_a_head_asked_for_one_position_a_row_gives_those_logits_and_everything_else_unchanged():
    """A catch-up reads each row's last pair's logits only (``last``): the same logits there as the whole
    block's (to fp32 rounding: the output head multiplies fewer rows), the same features, keys and values."""
    head = make_eagle3_head(TARGET)
    generator = torch.Generator().manual_seed(1)
    width = head.config.hidden_size
    embeds, features = (torch.randn(3, 6, width, generator=generator) for _ in range(2))
    positions = torch.arange(6)[None].expand(3, -1)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()[None, None].expand(3, -1, -1, -1)
    last = torch.tensor([5, 0, 3])
    with torch.no_grad():
        whole = head(embeds, features, positions, causal)
        picked = head(embeds, features, positions, causal, last=last)
    assert picked.logits.shape == (3, 1, whole.logits.shape[-1])
    torch.testing.assert_close(picked.logits[:, 0], whole.logits[torch.arange(3), last])
    for name in ("prenorm", "keys", "values"):
        assert torch.equal(getattr(picked, name), getattr(whole, name))
    assert not torch.allclose(picked.logits[:, 0], whole.logits[:, -1])  # row 1's pair 0 is not its last
