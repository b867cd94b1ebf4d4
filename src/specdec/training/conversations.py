"""Multi-turn chat data in the target's own words: real users' turns, every answer the target's.

A drafter serves chats, where later turns read earlier answers; trained only on first turns it
never sees such contexts. So a conversation is answered round by round: round r asks the target the
r-th user turn after the earlier turns *and the target's own earlier answers* (never the answers
of the model the conversation was first held with), each round a cached, resumable
:func:`~specdec.training.answers.generate_answers` run. Answers cut at the length limit enter the
next round's context as they are.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

from specdec.errors import DataNotFoundError, EmptyDataError
from specdec.pipeline import Pipeline
from specdec.training.answers import TargetAnswer, answers_path, generate_answers


def load_conversations(path: Path, limit: int | None = None) -> list[list[str]]:
    """The user turns of each conversation in a JSONL(.gz) file of ``{"turns": [str, ...]}`` rows
    (the layout of ``data/train/sharegpt/prompts.jsonl.gz``); empty turns end a conversation."""
    file = Path(path)
    if not file.is_file():
        raise DataNotFoundError(f"conversation file not found: {file}")
    opener = gzip.open if file.name.endswith(".gz") else open
    conversations = []
    with opener(file, "rt", encoding="utf-8") as lines:
        for line in lines:
            turns = []
            for turn in json.loads(line).get("turns", []):
                if not isinstance(turn, str) or not turn.strip():
                    break
                turns.append(turn.strip())
            if turns:
                conversations.append(turns)
    if not conversations:
        raise EmptyDataError(f"no conversations with user turns found in {file}")
    return conversations if limit is None else conversations[:limit]


def chat_of(turns: Sequence[str], answers: Sequence[str]) -> list[dict]:
    """Messages of a conversation so far: user turns interleaved with the answers given to them."""
    messages = []
    for i, turn in enumerate(turns):
        messages.append({"role": "user", "content": turn})
        if i < len(answers):
            messages.append({"role": "assistant", "content": answers[i]})
    return messages


def answer_conversations(
    pipeline: Pipeline,
    conversations: Sequence[Sequence[str]],
    *,
    source: str,
    max_new_tokens: int,
    cache_dir: Path,
    max_prompt_tokens: int,
    rounds: int | None = None,
    batch_size: int = 32,
    progress=None,
    answers_from: Path | None = None,
) -> list[tuple[Path, list[TargetAnswer]]]:
    """The target's answers to every turn of ``conversations``: per round (up to ``rounds``), its cache
    file and answers.

    A conversation leaves at the first round whose context (earlier turns, the target's earlier
    answers and the new turn, chat template applied) exceeds ``max_prompt_tokens``. ``answers_from``:
    exported answer ids to rebuild each round's cache file from (:func:`generate_answers`).
    """
    given: list[list[str]] = [[] for _ in conversations]
    depth = max(len(c) for c in conversations)
    per_round = []
    for r in range(depth if rounds is None else min(rounds, depth)):
        live = [i for i, turns in enumerate(conversations) if len(turns) > r and len(given[i]) == r]
        chats = [chat_of(conversations[i][: r + 1], given[i]) for i in live]
        fits = [len(pipeline.encode(chat)) <= max_prompt_tokens for chat in chats]
        live = [i for i, ok in zip(live, fits, strict=True) if ok]
        chats = [chat for chat, ok in zip(chats, fits, strict=True) if ok]
        if not chats:
            break
        settings = {"source": source, "max_new_tokens": max_new_tokens, "cache_dir": cache_dir}
        answers = generate_answers(
            pipeline, chats, batch_size=batch_size, progress=progress, answers_from=answers_from, **settings
        )
        for i, answer in zip(live, answers, strict=True):
            given[i].append(pipeline.tokenizer.decode(answer.answer_ids, skip_special_tokens=True).strip())
        per_round.append((answers_path(pipeline, chats, **settings), answers))
    return per_round
