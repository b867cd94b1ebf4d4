"""Answers shared without their prompts: exported answer ids rebuild the cache file byte for byte, and a
rebuild under other prompts is refused."""

import gzip
import json

import pytest

from specdec.errors import DataNotFoundError, InvalidArgumentError
from specdec.pipeline import Pipeline
from specdec.training import answers as answers_module
from specdec.training.answers import (
    ANSWER_IDS_MANIFEST,
    export_answer_ids,
    generate_answers,
    ids_file,
    read_complete,
    restore_answers,
)
from specdec.training.conversations import answer_conversations
from tiny import make_llama, make_tokenizer

PROMPTS = ["the quick brown fox", "def add(a, b):", "Once upon a time", "speculative decoding", "a small"]
SETTINGS = dict(source="tiny", max_new_tokens=5, batch_size=2)


@pytest.fixture(scope="module")
def pipe():
    tok = make_tokenizer()
    return Pipeline(make_llama(len(tok), seed=0, layers=2, hidden=32), tok)


def generate_calls(monkeypatch) -> list[int]:
    """Rows of each generation call made from here on."""
    calls: list[int] = []
    real = answers_module.Pipeline.generate

    def counted(self, prompts, **kwargs):
        calls.append(len(prompts))
        return real(self, prompts, **kwargs)

    monkeypatch.setattr(answers_module.Pipeline, "generate", counted)
    return calls


def test_exported_ids_rebuild_the_cache_file_without_generating(tmp_path, pipe, monkeypatch):
    full = generate_answers(pipe, PROMPTS, cache_dir=tmp_path / "made", **SETTINGS)
    (cache_file,) = (tmp_path / "made").glob("answers-*.jsonl")
    exported = export_answer_ids(cache_file, tmp_path / "shared")
    assert exported == ids_file(tmp_path / "shared", cache_file)
    with gzip.open(exported, "rt") as lines:  # the answers alone: no prompt ids in the shared file
        assert all(isinstance(json.loads(line)[0], int) for line in lines)
    entry = json.loads((tmp_path / "shared" / ANSWER_IDS_MANIFEST).read_text())[cache_file.name]
    assert entry["rows"] == 5 and entry["answer_tokens"] == sum(len(a.answer_ids) for a in full)
    calls = generate_calls(monkeypatch)
    rebuilt = generate_answers(
        pipe, PROMPTS, cache_dir=tmp_path / "fresh", answers_from=tmp_path / "shared", **SETTINGS
    )
    assert calls == []
    assert [a.__dict__ for a in rebuilt] == [a.__dict__ for a in full]
    assert (tmp_path / "fresh" / cache_file.name).read_bytes() == cache_file.read_bytes()


def test_a_partial_export_is_rebuilt_and_the_rest_generated(tmp_path, pipe, monkeypatch):
    full = generate_answers(pipe, PROMPTS, cache_dir=tmp_path / "made", **SETTINGS)
    (cache_file,) = (tmp_path / "made").glob("answers-*.jsonl")
    lines = cache_file.read_text().splitlines(keepends=True)
    cache_file.write_text("".join(lines[:3]))  # a run stopped after three answers
    export_answer_ids(cache_file, tmp_path / "shared")
    calls = generate_calls(monkeypatch)
    resumed = generate_answers(
        pipe, PROMPTS, cache_dir=tmp_path / "fresh", answers_from=tmp_path / "shared", **SETTINGS
    )
    assert calls == [2]  # the fourth and fifth rows only: one batch, from where the export stopped
    assert [a.__dict__ for a in resumed] == [a.__dict__ for a in full]


def test_ids_under_other_prompts_or_tampered_are_refused(tmp_path, pipe):
    """The negative controls: the digest check must fail when the prompts or the answers differ."""
    generate_answers(pipe, PROMPTS, cache_dir=tmp_path / "made", **SETTINGS)
    (cache_file,) = (tmp_path / "made").glob("answers-*.jsonl")
    export_answer_ids(cache_file, tmp_path / "shared")
    rows = read_complete(cache_file)
    prompt_ids = [row.prompt_ids for row in rows]
    target = tmp_path / "fresh" / cache_file.name
    with pytest.raises(InvalidArgumentError, match="do not rebuild"):
        restore_answers(target, [[*p, 7] for p in prompt_ids], tmp_path / "shared")
    assert not target.exists()
    ids = ids_file(tmp_path / "shared", cache_file)
    tampered = [row.answer_ids for row in rows]
    tampered[2][0] += 1
    with gzip.open(ids, "wt") as f:
        f.writelines(json.dumps(a) + "\n" for a in tampered)
    with pytest.raises(InvalidArgumentError, match="do not rebuild"):
        restore_answers(target, prompt_ids, tmp_path / "shared")
    with pytest.raises(InvalidArgumentError, match="3 prompts"):
        restore_answers(target, prompt_ids[:3], tmp_path / "shared")
    ids.write_bytes(b"not gzip")
    with pytest.raises(InvalidArgumentError, match="not a gzipped"):
        restore_answers(target, prompt_ids, tmp_path / "shared")
    ids.unlink()
    with pytest.raises(DataNotFoundError, match="missing"):
        restore_answers(target, prompt_ids, tmp_path / "shared")
    assert restore_answers(tmp_path / "fresh" / "answers-other.jsonl", prompt_ids, tmp_path / "shared") == 0
    with pytest.raises(DataNotFoundError):
        export_answer_ids(tmp_path / "none.jsonl", tmp_path / "shared")


def test_every_round_of_conversations_rebuilds_from_its_exported_ids(tmp_path, pipe, monkeypatch):
    conversations = [["hello there", "and then?", "why"], ["def f(x):"], ["the quick", "brown fox"]]
    settings = dict(source="tiny", max_new_tokens=5, max_prompt_tokens=500)
    rounds = answer_conversations(pipe, conversations, cache_dir=tmp_path / "made", **settings)
    for path, _ in rounds:
        export_answer_ids(path, tmp_path / "shared")
    calls = generate_calls(monkeypatch)
    again = answer_conversations(
        pipe, conversations, cache_dir=tmp_path / "fresh", answers_from=tmp_path / "shared", **settings
    )
    assert calls == []  # each round's prompts hold the earlier rounds' rebuilt answers, and match
    assert [[a.__dict__ for a in answers] for _, answers in again] == [
        [a.__dict__ for a in answers] for _, answers in rounds
    ]


def test_data_answers_cli_checks_the_answers_folder_first(tmp_path, capsys):
    from specdec.cli.main import main

    args = ["data", "answers", "--prompts", "self", "--answers-from", str(tmp_path)]
    assert main(args) == 2
    assert ANSWER_IDS_MANIFEST in capsys.readouterr().err
