"""Standalone Tandem generation: blocks of γ secondary tokens, with or without the primary's free token."""

import pytest
import torch

from specdec.decoders import TandemGeneration
from specdec.drafters import TandemDrafter, make_drafter
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from tiny import make_llama, make_oracle_tandem, make_tandem, make_tokenizer

PROMPTS = ["the quick brown fox jumps over the lazy dog", "def add(a, b):"]


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module")
def primary(tok):
    return make_llama(len(tok), seed=0, layers=3)


@pytest.mark.parametrize("free_token", [True, False])
@pytest.mark.parametrize("gamma", [1, 3])
def test_a_secondary_that_is_the_primary_writes_the_primarys_text(tok, primary, free_token, gamma):
    """With an exact secondary, standalone Tandem is plain decoding at γ (+1) tokens per primary pass."""
    pipe = Pipeline(primary, tok, drafter=TandemDrafter(make_oracle_tandem(primary), tok))
    plain = pipe.generate(PROMPTS, method="plain", max_new_tokens=25)
    out = pipe.generate(PROMPTS, method=TandemGeneration(gamma, free_token), max_new_tokens=25)
    assert out.token_ids == plain.token_ids
    per_pass = gamma + 1 if free_token else gamma
    assert out.stats.tokens_per_target_call == pytest.approx(per_pass, rel=0.2)


def test_blocks_are_the_secondarys_and_the_free_token_the_primarys(tok, primary):
    tandem = make_tandem(primary)  # untrained: its tokens differ from the primary's
    pipe = Pipeline(primary, tok, drafter=TandemDrafter(tandem, tok))
    with_free = pipe.generate(PROMPTS[:1], method=TandemGeneration(3, free_token=True), max_new_tokens=16)
    assert with_free.from_draft[0] == ([True] * 3 + [False]) * 4
    assert with_free.stats.acceptance_rate == 1.0  # nothing is verified
    only_secondary = pipe.generate(
        PROMPTS[:1], method=TandemGeneration(3, free_token=False), max_new_tokens=15
    )
    # One representation pass per block of 3 (the budget's last tokens come in shorter blocks).
    assert only_secondary.stats.accepted_histogram[2] == 4 and only_secondary.stats.target_calls <= 6
    plain = pipe.generate(PROMPTS[:1], method="plain", max_new_tokens=16)
    assert with_free.token_ids != plain.token_ids  # not lossless by design
    with pytest.raises(InvalidArgumentError, match="γ"):
        TandemGeneration(0)


def test_a_trained_secondary_loads_as_a_drafter_spec(tmp_path, tok, primary):
    tandem = make_tandem(primary)
    tandem.save_pretrained(tmp_path / "t")
    drafter = make_drafter(f"tandem:{tmp_path / 't'}", primary, tok)
    assert isinstance(drafter, TandemDrafter) and drafter.target_hidden_layers == tandem.primary_layers
    out = Pipeline(primary, tok, drafter=drafter).generate(PROMPTS, max_new_tokens=10)
    assert out.token_ids == Pipeline(primary, tok).generate(PROMPTS, max_new_tokens=10).token_ids
    with torch.no_grad():
        assert drafter.tandem.projections[0].weight.equal(tandem.projections[0].weight)


def test_the_cli_generates_standalone(tmp_path, tiny_model_dir, tiny_llama, capsys):
    from specdec.cli.main import main

    make_tandem(tiny_llama).save_pretrained(tmp_path / "t")
    base = ["generate", "the quick fox", "--model", str(tiny_model_dir), "--max-new-tokens", "8"]
    base += ["--drafter", f"tandem:{tmp_path / 't'}", "--method", "tandem", "--standalone"]
    assert main([*base, "--gamma", "2", "--no-free-token"]) == 0
    assert "tandem" in capsys.readouterr().out
    assert main([*base, "--gamma", "adaptive"]) == 2
    assert "integer --gamma" in capsys.readouterr().err
