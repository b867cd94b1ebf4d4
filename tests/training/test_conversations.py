import gzip
import json
from pathlib import Path

import pytest

from specdec.errors import DataNotFoundError, EmptyDataError
from specdec.pipeline import Pipeline
from specdec.training.conversations import answer_conversations, chat_of, load_conversations
from tiny import make_llama, make_tokenizer


@pytest.fixture(scope="module")
def pipe():
    tok = make_tokenizer()
    return Pipeline(make_llama(len(tok), seed=0, layers=2, hidden=32), tok)


def write_conversations(path, rows) -> None:
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)


def test_load_conversations_reads_turns_and_stops_at_an_empty_one(tmp_path):
    path = tmp_path / "c.jsonl.gz"
    write_conversations(path, [{"turns": ["hi", " more "]}, {"turns": ["one", "", "lost"]}, {"turns": []}])
    assert load_conversations(path) == [["hi", "more"], ["one"]]
    assert load_conversations(path, limit=1) == [["hi", "more"]]
    with pytest.raises(DataNotFoundError):
        load_conversations(tmp_path / "missing.jsonl")
    write_conversations(path, [{"turns": []}])
    with pytest.raises(EmptyDataError):
        load_conversations(path)


def test_chat_of_interleaves_turns_and_answers():
    assert chat_of(["a", "b"], ["x"]) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": "b"},
    ]


def test_each_turn_is_answered_after_the_targets_own_earlier_answers(tmp_path, pipe):
    conversations = [["hello there", "and then?", "why"], ["def f(x):"], ["the quick", "brown fox"]]
    rounds = answer_conversations(
        pipe, conversations, source="tiny", max_new_tokens=5, cache_dir=tmp_path, max_prompt_tokens=500
    )
    assert [len(answers) for _, answers in rounds] == [3, 2, 1]
    first = {tuple(a.prompt_ids): a for a in rounds[0][1]}
    said = pipe.tokenizer.decode(
        first[tuple(pipe.encode([{"role": "user", "content": "hello there"}]))].answer_ids,
        skip_special_tokens=True,
    ).strip()
    second = chat_of(["hello there", "and then?"], [said])
    assert rounds[1][1][0].prompt_ids == pipe.encode(second)
    assert all(path.is_file() for path, _ in rounds)
    again = answer_conversations(
        pipe,
        conversations,
        source="tiny",
        max_new_tokens=5,
        cache_dir=tmp_path,
        max_prompt_tokens=500,
        rounds=2,
    )
    assert [path for path, _ in again] == [path for path, _ in rounds[:2]]  # read back, not regenerated


def test_a_conversation_leaves_at_its_first_round_over_the_prompt_limit(tmp_path, pipe):
    conversations = [["hi", "again", "more"], ["hello", "a much longer follow-up turn than the limit allows"]]
    limit = len(pipe.encode(chat_of(["hi", "again"], ["x y z w v"]))) + 2
    rounds = answer_conversations(
        pipe, conversations, source="tiny", max_new_tokens=3, cache_dir=tmp_path, max_prompt_tokens=limit
    )
    assert [len(answers) for _, answers in rounds][:2] == [2, 1]
    assert all(len(a.prompt_ids) <= limit for _, answers in rounds for a in answers)


def test_data_answers_conversations_cli_writes_every_round_and_a_manifest(tmp_path, tiny_model_dir, capsys):
    from specdec.cli.main import main

    path = tmp_path / "chats.jsonl.gz"
    write_conversations(
        path, [{"turns": ["hello there", "and then?"]}, {"turns": ["why " * 80]}, {"turns": ["ok"]}]
    )
    args = ["data", "answers", "--target", str(tiny_model_dir), "--prompts", f"conversations:{path}"]
    args += ["--prompts", "gsm8k:" + str(tmp_path / "q.jsonl"), "--count", "3", "--max-new-tokens", "3"]
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "two plus two " * 60}) + "\n")
    assert main([*args, "--max-prompt-tokens", "60", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    manifest = json.loads(Path(out[-1].removeprefix("manifest: ")).read_text())
    assert manifest["single_turn_prompts"] == {"prompts": 1, "distinct": 1, "too_long": 1}
    assert [f["answers"] for f in manifest["files"]] == [2, 1]  # round 1 (the long turn left out), round 2
    assert main(["data", "answers", "--prompts", f"conversations:{tmp_path / 'none.jsonl'}"]) == 2
