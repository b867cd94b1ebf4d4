"""The Tandem secondary (eq. 2, Fig. 1): what each position may read, and plumbing that can't drift."""

import pytest
import torch

from specdec.errors import InvalidArgumentError, ModelNotFoundError, VocabularyMismatchError
from specdec.models.tandem import (
    TandemModel,
    block_causal_mask,
    default_layer_map,
    fixed_blocks,
    primary_signature,
)
from specdec.training import DraftShape, build_draft
from tiny import make_gpt2, make_llama

VOCAB = 320
PRIMARIES = {
    "llama": lambda: make_llama(VOCAB, seed=0, layers=4),
    "gpt2": lambda: make_gpt2(VOCAB, seed=0, layers=4),
}


@pytest.fixture(scope="module", params=list(PRIMARIES))
def primary(request):
    return PRIMARIES[request.param]()


def tandem_for(primary, layers: int = 2, seed: int = 0) -> TandemModel:
    torch.manual_seed(seed)
    secondary = build_draft(primary, DraftShape(num_layers=layers, hidden_size=16, num_heads=2), seed=seed)
    return TandemModel(secondary, primary_signature(primary)).eval()


def primary_states(primary, tokens: torch.Tensor) -> dict[int, torch.Tensor]:
    with torch.inference_mode():
        return dict(enumerate(primary(tokens, output_hidden_states=True).hidden_states))


def test_default_layer_map_is_spread_and_ends_at_the_last_layer():
    assert default_layer_map(30, 2) == (15, 30)
    assert default_layer_map(4, 4) == (1, 2, 3, 4)
    assert default_layer_map(30, 1) == (30,)


def test_fixed_blocks_with_an_offset():
    assert fixed_blocks(7, 2).tolist() == [0, 0, 2, 2, 4, 4, 6]
    assert fixed_blocks(7, 3, offset=1).tolist() == [0, 0, 2, 2, 2, 5, 5]
    with pytest.raises(InvalidArgumentError, match="offset"):
        fixed_blocks(5, 2, offset=2)


def test_the_mask_shows_each_own_token_earlier_blocks_and_its_own_block():
    starts = fixed_blocks(6, 2)[None]  # blocks [0, 1] [2, 3] [4, 5]
    mask = block_causal_mask(starts)[0, 0]
    own = mask[6:]  # rows of the own stream
    for i in range(6):
        primary_seen = own[i, :6].nonzero().flatten().tolist()
        own_seen = own[i, 6:].nonzero().flatten().tolist()
        assert primary_seen == list(range(starts[0, i]))
        assert own_seen == list(range(int(starts[0, i]), i + 1))
    assert not mask[:6, 6:].any()  # primary-state tokens never read own states


def test_zero_projections_and_one_block_make_an_ordinary_decoder(primary):
    """With nothing to read from the primary (one block) the Tandem pass is the secondary's own forward."""
    tandem = tandem_for(primary)
    tokens = torch.randint(3, VOCAB, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        for p in tandem.projections:
            p.weight.zero_(), p.bias.zero_()
        got = tandem(tokens, primary_states(primary, tokens), torch.zeros(1, 9, dtype=torch.long))
        expected = tandem.secondary(tokens).logits
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_a_position_reads_exactly_the_primary_states_before_its_block(primary):
    tandem = tandem_for(primary)
    tokens = torch.randint(3, VOCAB, (1, 10), generator=torch.Generator().manual_seed(2))
    states = primary_states(primary, tokens)
    starts = fixed_blocks(10, 3, offset=1)[None]  # blocks [0, 1] [2, 3, 4] [5, 6, 7] [8, 9]
    with torch.no_grad():
        base = tandem(tokens, states, starts)
        for k in range(10):
            moved = {h: s.clone() for h, s in states.items()}
            for s in moved.values():
                s[:, k] += 1.0
            changed = (tandem(tokens, moved, starts) - base).abs().amax(-1)[0] > 1e-6
            assert changed.tolist() == [k < int(starts[0, i]) for i in range(10)], k


def test_own_tokens_never_leak_across_blocks(primary):
    tandem = tandem_for(primary)
    tokens = torch.randint(3, VOCAB, (1, 8), generator=torch.Generator().manual_seed(3))
    states = primary_states(primary, tokens)
    starts = fixed_blocks(8, 2)[None]
    with torch.no_grad():
        base = tandem(tokens, states, starts)
        other = tokens.clone()
        other[0, 3] = (other[0, 3] + 1) % VOCAB  # own input of position 3 (block [2, 3]) only
        changed = (tandem(other, states, starts) - base).abs().amax(-1)[0] > 1e-6
    assert changed.tolist() == [False, False, False, True, False, False, False, False]


def test_save_and_load(tmp_path, primary):
    tandem = tandem_for(primary, seed=4)
    tandem.save_pretrained(tmp_path / "t")
    loaded = TandemModel.from_pretrained(tmp_path / "t")
    assert loaded.layer_map == tandem.layer_map and loaded.primary == tandem.primary
    tokens = torch.randint(3, VOCAB, (1, 7), generator=torch.Generator().manual_seed(5))
    states, starts = primary_states(primary, tokens), fixed_blocks(7, 2)[None]
    with torch.no_grad():
        torch.testing.assert_close(loaded(tokens, states, starts), tandem(tokens, states, starts))
    loaded.check_primary(primary)
    with pytest.raises(VocabularyMismatchError, match="reads a primary"):
        loaded.check_primary(make_llama(VOCAB, layers=3))
    with pytest.raises(ModelNotFoundError, match="not a Tandem"):
        TandemModel.from_pretrained(tmp_path)


def test_identity_projections_from_a_full_copy_give_the_primary(primary):
    """A secondary copied from every primary layer, reading each layer's own input through identity
    projections, sees the primary's exact keys and values for earlier blocks and computes the same ones
    for its own block: its logits are the primary's, whatever the blocks."""
    depth = primary.config.num_hidden_layers
    secondary = build_draft(primary, DraftShape(num_layers=depth, init_layers=tuple(range(depth))))
    signature = primary_signature(primary)
    tandem = TandemModel(secondary, signature, tuple(range(depth)), projection_init="identity").eval()
    tokens = torch.randint(3, VOCAB, (2, 9), generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        expected = primary(tokens).logits
        for gamma, offset in ((2, 0), (3, 1), (9, 0)):
            got = tandem(tokens, primary_states(primary, tokens), fixed_blocks(9, gamma, offset)[None])
            torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    random = TandemModel(secondary, signature, tuple(range(depth))).eval()  # negative control
    with torch.no_grad():
        got = random(tokens, primary_states(primary, tokens), fixed_blocks(9, 2)[None])
    assert (got - expected).abs().amax() > 1e-2


def test_identity_projections_need_equal_widths(primary):
    narrow = build_draft(primary, DraftShape(num_layers=2, hidden_size=16, num_heads=2))
    with pytest.raises(InvalidArgumentError, match="identity projections"):
        TandemModel(narrow, primary_signature(primary), projection_init="identity")
    with pytest.raises(InvalidArgumentError, match="projection_init"):
        TandemModel(narrow, primary_signature(primary), projection_init="eye")


def test_bad_layer_maps_and_vocabularies(primary):
    secondary = build_draft(primary, DraftShape(num_layers=2, hidden_size=16, num_heads=2))
    signature = primary_signature(primary)
    for bad in ([1], [1, 5], [-1, 2], [1.0, 2]):
        with pytest.raises(InvalidArgumentError, match="layer_map"):
            TandemModel(secondary, signature, bad)
    with pytest.raises(VocabularyMismatchError, match="token ids"):
        TandemModel(secondary, {**signature, "vocab_size": VOCAB + 1})


def test_logits_at_kept_positions_are_the_full_passs(primary):
    """Training applies the output head to answer positions only; those logits must be the full pass's."""
    from specdec.models.tandem import logits_at

    tandem = tandem_for(primary)
    generator = torch.Generator().manual_seed(4)
    tokens = torch.randint(3, VOCAB, (2, 11), generator=generator)
    valid = torch.ones(2, 11, dtype=torch.bool)
    valid[1, 8:] = False  # a right-padded row
    keep = torch.rand(2, 11, generator=generator) < 0.5
    keep &= valid
    states, starts = primary_states(primary, tokens), fixed_blocks(11, 2, offset=1)[None]
    with torch.no_grad():
        full = tandem(tokens, states, starts, valid=valid)
        torch.testing.assert_close(tandem(tokens, states, starts, valid=valid, keep=keep), full[keep])
        draft = tandem.secondary
        inputs = {"input_ids": tokens, "attention_mask": valid.long()}
        torch.testing.assert_close(logits_at(draft, inputs, keep), draft(**inputs).logits[keep])
