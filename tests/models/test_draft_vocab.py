"""The trimmed draft head: kept rows give the full head's logits, every other token −inf (p = 0), the
user's model is untouched; token counts round-trip through draft_vocab.json; `vocab-N:DRAFT` and
`specdec data draft-vocab` build and explain it. Losslessness with it: tests/decoders (conformance
matrix and the chi-square law tests)."""

import json

import pytest
import torch

from specdec.cli.main import main
from specdec.decoders import SpeculativeSampling
from specdec.drafters import ModelDrafter, make_drafter
from specdec.errors import DataNotFoundError, InvalidArgumentError
from specdec.models import load_model
from specdec.models.draft_vocab import (
    VOCAB_FILE,
    TrimmedHead,
    token_counts,
    top_tokens,
    trim_output_head,
    write_vocab_file,
)
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, logits_to_probs
from specdec.training.answers import TargetAnswer
from tiny import make_gpt2, make_llama, random_answers_file

VOCAB = 320


@pytest.mark.parametrize("make", [make_llama, make_gpt2])
def test_kept_rows_are_exact_and_the_rest_have_zero_probability(make):
    model = make(VOCAB, seed=0)
    keep = torch.tensor([3, 10, 11, 200, 319])
    trimmed = trim_output_head(model, keep)
    ids = torch.randint(3, VOCAB, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full, cut = model(ids).logits, trimmed(ids).logits
    assert cut.shape == full.shape
    torch.testing.assert_close(cut[..., keep], full[..., keep], rtol=1e-5, atol=1e-5)
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[keep] = False
    assert torch.isneginf(cut[..., outside]).all()
    probs = logits_to_probs(cut[0, -1], SamplingConfig(temperature=0.7, top_p=0.95))
    assert float(probs[outside].sum()) == 0.0 and abs(float(probs.sum()) - 1) < 1e-5
    # the user's model keeps its own head; the copy shares every other weight
    assert type(model.get_output_embeddings()) is torch.nn.Linear
    assert isinstance(trimmed.get_output_embeddings(), TrimmedHead)
    assert trimmed.get_input_embeddings().weight is model.get_input_embeddings().weight


def test_bad_kept_ids_are_refused():
    model = make_llama(VOCAB, seed=0)
    with pytest.raises(InvalidArgumentError, match="kept token ids"):
        trim_output_head(model, torch.tensor([0, VOCAB]))


def test_counts_round_trip_and_the_top_tokens_are_the_most_frequent(tmp_path):
    answers = [TargetAnswer([1, 2], [5, 5, 5, 7, 7, 9]), TargetAnswer([9], [7, 5, 4])]
    counts = token_counts(a.answer_ids for a in answers)
    assert counts == {5: 4, 7: 3, 9: 1, 4: 1}  # answer tokens only: prompts are not the target's text
    write_vocab_file(tmp_path, counts, {"answers": ["a.jsonl"]})
    stored = json.loads((tmp_path / VOCAB_FILE).read_text())
    assert stored["token_ids"][:2] == [5, 7] and stored["tokens_counted"] == 9
    assert top_tokens(tmp_path, 2).tolist() == [5, 7]
    assert top_tokens(tmp_path, 2, always=[2]).tolist() == [2, 5, 7]
    with pytest.raises(InvalidArgumentError, match="size >= 1"):
        top_tokens(tmp_path, 0)
    with pytest.raises(DataNotFoundError, match="draft-vocab"):
        top_tokens(tmp_path / "missing", 2)


def test_cli_counts_tokens_and_vocab_spec_builds_a_trimmed_drafter(tmp_path, tiny_model_dir, capsys):
    answers = random_answers_file(tmp_path / "answers.jsonl", 30)
    assert main(f"data draft-vocab --answers {answers} --output {tiny_model_dir}".split()) == 0
    assert "cover" in capsys.readouterr().out
    target = load_model(str(tiny_model_dir))
    drafter = make_drafter(f"vocab-16:{tiny_model_dir}", target.model, target.tokenizer)
    assert 16 <= len(drafter.vocab) <= 17  # the top 16, plus EOS if it is not among them
    assert target.model.config.eos_token_id in drafter.vocab.tolist()
    tree = make_drafter(f"tree-2:vocab-16:{tiny_model_dir}", target.model, target.tokenizer)
    assert tree.tree_width == 2 and torch.equal(tree.vocab, drafter.vocab)
    cheap = make_drafter(f"bf16:vocab-16:{tiny_model_dir}", target.model, target.tokenizer)
    assert cheap.model.dtype == torch.bfloat16 and torch.equal(cheap.vocab, drafter.vocab)
    assert cheap.engine.model.dtype == torch.bfloat16
    assert target.model.dtype == torch.float32  # the target keeps its own precision
    int8 = make_drafter(f"int8:vocab-16:{tiny_model_dir}", target.model, target.tokenizer)
    quantized = [
        m for m in int8.engine.model.modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)
    ]
    assert len(quantized) == 7 * target.model.config.num_hidden_layers + 1  # every linear, the head too
    assert quantized[-1].out_features == len(int8.vocab) and torch.equal(int8.vocab, drafter.vocab)
    pipe = Pipeline(target.model, target.tokenizer)
    plain = pipe.generate(["the quick brown fox"], method="plain", max_new_tokens=20)
    out = pipe.with_drafter(int8).generate(
        ["the quick brown fox"], method=SpeculativeSampling(3), max_new_tokens=20
    )
    assert out.token_ids == plain.token_ids and out.stats.proposed_tokens > 0
    with pytest.raises(InvalidArgumentError, match="int8 drafts run on CPU only"):
        ModelDrafter(make_llama(VOCAB, seed=1).to("meta"), int8=True)
    with pytest.raises(InvalidArgumentError, match="vocab-N:MODEL with N >= 1"):
        make_drafter(f"vocab-0:{tiny_model_dir}", target.model, target.tokenizer)
    (tiny_model_dir / VOCAB_FILE).unlink()
    with pytest.raises(DataNotFoundError, match="draft-vocab"):
        make_drafter(f"vocab-16:{tiny_model_dir}", target.model, target.tokenizer)
