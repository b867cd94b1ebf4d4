"""Text the target writes itself: prompts answered greedily by the target, generated once and cached.

A drafter is asked to predict the target's own outputs, so that is what it learns best from: BiLD's
sequence-level alignment (§3.5.1), distilled drafts, Tandem and BiTA all train on the target's
answers to chat-style prompts built from the training corpora or written by the target itself
(:func:`self_written_prompts`), never the evaluation prompts. At every
answer position the label *is* the target's greedy choice. Generation is the expensive part, so it
runs in large batches and is appended to one cache file batch by batch, under a key of everything
that determines it (target, prompts, length, chat template): an interrupted run resumes where it
stopped, and every later run, of any method, reuses it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specdec.errors import DataNotFoundError, EmptyDataError, InvalidArgumentError
from specdec.inputs import check_count
from specdec.pipeline import Pipeline

# Instruction templates that turn corpus snippets into chat prompts unlike the evaluation sets.
TEMPLATES = {
    "gsm8k": "{text}",
    "continue": "Continue the following text for a few sentences:\n\n{text}",
    "summarize": "Summarize the following passage in two sentences:\n\n{text}",
    "explain-code": "Explain what the following Python code does:\n\n{text}",
    "passage-question": "{text}\n\n{question}",
}

# Questions asked after a passage (``passage-question``, one per snippet in turn): requests whose answers
# copy from a long context, as retrieval-augmented ones do, where a head trained on chat alone guesses little.
PASSAGE_QUESTIONS = (
    "What is the passage above mainly about?",
    "Describe what happens in the text above.",
    "According to the passage, what are the key points?",
    "Explain the main ideas of the text above in your own words.",
    "Who or what is described in the passage, and what do we learn about them?",
    "List the important facts stated in the passage.",
)


# Openers that steer self-written requests towards what users ask of a chat model (one per intent:
# open questions, writing, rewriting and editing, summarisation, translation, extraction, math word
# problems, code); the target writes the rest of each request itself.
INTENT_OPENERS = (
    "",
    "What",
    "How do I",
    "Can you explain",
    "Write a",
    "Write an email",
    "Rewrite the following",
    "Edit this paragraph",
    "Summarize the following",
    "Translate the following",
    "Extract",
    "Solve this math problem:",
    "Write a Python function",
    "Fix this code",
)

# Prompts are answered sorted by length within consecutive chunks of this many: batches of similar
# length (little padding to attend over), and a run stopped early still holds prompts of every length
# (sorting the whole source would leave a stopped run with only its shortest prompts).
LENGTH_CHUNK = 1024

# Where a user's message goes in a rendered chat template (found by rendering this in its place).
_USER_TEXT = "\x00specdec-user-text\x00"


@dataclass
class TargetAnswer:
    prompt_ids: list[int]  # the prompt as the target saw it (chat template applied)
    answer_ids: list[int]  # its greedy answer


def load_prompts(spec: str, limit: int, snippet_chars: int = 600, per_document: int = 8) -> list[str]:
    """Up to ``limit`` prompts from ``KIND:PATH`` (KIND a key of :data:`TEMPLATES`).

    gsm8k reads each line's ``question``; other kinds cut ``per_document`` snippets of ``snippet_chars``
    spread evenly through each document's ``text`` (a book's opening pages alone would teach little),
    then take an even spread of the snippets found (``passage-question`` asks each its question in turn).
    """
    check_count("snippet_chars", snippet_chars)
    kind, _, path = spec.partition(":")
    if kind not in TEMPLATES or not path:
        raise EmptyDataError(
            f"alignment prompts must be KIND:PATH with KIND in {sorted(TEMPLATES)}, got {spec!r}"
        )
    file = Path(path)
    if not file.is_file():
        raise DataNotFoundError(f"alignment prompt file not found: {file}")
    opener = gzip.open if file.name.endswith(".gz") else open
    texts: list[str] = []
    with opener(file, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if kind == "gsm8k":
                texts.append(row.get("question", "").strip())
                continue
            text = row.get("text", "")
            starts = range(0, max(1, len(text) - snippet_chars), max(1, len(text) // per_document))
            for start in list(starts)[:per_document]:
                snippet = text[start : start + snippet_chars].strip()
                if len(snippet) > 40:
                    texts.append(snippet)
    texts = [t for t in texts if t]
    if not texts:
        raise EmptyDataError(f"no prompts found in {file}")
    step = max(1, len(texts) // limit)
    chosen = texts[::step][:limit]
    questions = [PASSAGE_QUESTIONS[i % len(PASSAGE_QUESTIONS)] for i in range(len(chosen))]
    return [TEMPLATES[kind].format(text=t, question=q) for t, q in zip(chosen, questions, strict=True)]


def user_turn_prefix(tokenizer) -> list[int]:
    """Token ids of the chat template rendered up to where a user's message begins (system turn
    included): what an instruction-tuned model continues with a request of its own."""
    if not getattr(tokenizer, "chat_template", None):
        raise InvalidArgumentError("self-written prompts need a tokenizer with a chat template")
    text = tokenizer.apply_chat_template([{"role": "user", "content": _USER_TEXT}], tokenize=False)
    return tokenizer.encode(text[: text.index(_USER_TEXT)], add_special_tokens=False)


def self_written_prompts(
    pipeline: Pipeline,
    count: int,
    *,
    source: str,
    cache_dir: Path,
    seed: int = 0,
    openers: Sequence[str] = ("",),
    max_new_tokens: int = 64,
    batch_size: int = 64,
    progress=None,
) -> list[str]:
    """Up to ``count`` user requests written by the target itself (Magpie, Xu et al. 2024).

    Given only the chat template up to where a user's text begins, an instruction-tuned model writes
    a request of the kind it was tuned on: chat prompts far more varied than templates over a few
    corpora, and no evaluation set is touched. Left alone a small model writes mostly open questions;
    ``openers`` (row i starts its request with ``openers[i % len(openers)]``, e.g.
    :data:`INTENT_OPENERS`) steer rows towards the other things users ask for. Row i is sampled at
    temperature 1, top-p 0.95 (a small model's incoherent tail cut) with seed ``seed + i``; requests
    that do not end their turn within ``max_new_tokens``, empty ones and repeats are dropped, so fewer
    than ``count`` may come back. Generated requests are cached (and resumed) like answers, under a
    key of what determines them.
    """
    check_count("count", count)
    prefix = user_turn_prefix(pipeline.tokenizer)
    starts = [pipeline.tokenizer.encode(o, add_special_tokens=False) if o else [] for o in openers]
    settings = f"self-written:{count}:{seed}:t1.0:p0.95"
    if tuple(openers) != ("",):
        settings += ":openers:" + json.dumps(list(openers))
    template = pipeline.tokenizer.chat_template
    path = Path(cache_dir) / f"prompts-{answers_key(source, [settings], max_new_tokens, template)}.jsonl"
    rows = _read_complete(path, parse=lambda row: {"text": str(row["text"])})
    if progress is not None and rows:
        progress(len(rows))
    path.parent.mkdir(parents=True, exist_ok=True)
    for start in range(len(rows), count, batch_size):
        size = min(batch_size, count - start)
        which = [(start + i) % len(openers) for i in range(size)]
        out = pipeline.generate(
            [prefix + starts[k] for k in which],
            method="plain",
            max_new_tokens=max_new_tokens,
            temperature=1.0,
            top_p=0.95,
            seed=[seed + start + i for i in range(size)],
        )
        new = [
            {"text": _request(openers[k], text) if reason == "eos" else ""}
            for k, text, reason in zip(which, out.texts, out.finish_reasons, strict=True)
        ]
        _append(path, new)
        rows.extend(new)
        if progress is not None:
            progress(size)
    return list(dict.fromkeys(row["text"] for row in rows if row["text"]))


def _request(opener: str, continuation: str) -> str:
    """The request a row wrote: its opener and what followed, or nothing if it added nothing."""
    if opener and not continuation.strip():
        return ""
    return (opener + continuation).strip()


def answers_key(source: str, prompts: Sequence[str], max_new_tokens: int, template: str | None) -> str:
    digest = hashlib.sha256()
    for part in (source, str(max_new_tokens), template or "", *prompts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def generate_answers(
    pipeline: Pipeline,
    prompts: Sequence[str | list[dict]],
    *,
    source: str,
    max_new_tokens: int,
    cache_dir: Path,
    batch_size: int = 32,
    progress=None,
) -> list[TargetAnswer]:
    """Greedy target answers to ``prompts`` (user texts, or chats ending with a user turn; chat template
    applied), in prompt order.

    ``source`` names the target as generated (model and dtype): it is part of the cache key. Prompts
    are answered ``batch_size`` at a time in :data:`LENGTH_CHUNK` chunks, shortest first within each
    (rows of a batch share the cache's width, so one long prompt would make every row attend over its
    padding), and each batch is appended (flushed to disk) to the cache file in that order: a killed
    run loses at most one batch, and a rerun reads back what is there and continues.
    """
    path = answers_path(pipeline, prompts, source=source, max_new_tokens=max_new_tokens, cache_dir=cache_dir)
    ids = [pipeline.encode(p, chat=True) for p in prompts]
    order = [
        i
        for start in range(0, len(ids), LENGTH_CHUNK)
        for i in sorted(range(start, min(start + LENGTH_CHUNK, len(ids))), key=lambda i: len(ids[i]))
    ]
    answers = _read_complete(path)
    if progress is not None and answers:
        progress(len(answers))
    path.parent.mkdir(parents=True, exist_ok=True)
    for start in range(len(answers), len(order), batch_size):
        batch = order[start : start + batch_size]
        out = pipeline.generate([ids[i] for i in batch], method="plain", max_new_tokens=max_new_tokens)
        new = [TargetAnswer(ids[i], answer) for i, answer in zip(batch, out.token_ids, strict=True)]
        _append(path, [a.__dict__ for a in new])
        answers.extend(new)
        if progress is not None:
            progress(len(batch))
    rank = {i: r for r, i in enumerate(order)}
    return [answers[rank[i]] for i in range(len(order))]


def answers_path(
    pipeline: Pipeline,
    prompts: Sequence[str | list[dict]],
    *,
    source: str,
    max_new_tokens: int,
    cache_dir: Path,
) -> Path:
    """The cache file :func:`generate_answers` writes for these arguments (the order is part of its key)."""
    template = getattr(pipeline.tokenizer, "chat_template", None)
    keys = [p if isinstance(p, str) else json.dumps(p, ensure_ascii=False) for p in prompts]
    key = answers_key(f"{source}:by-length:{LENGTH_CHUNK}", keys, max_new_tokens, template)
    return Path(cache_dir) / f"answers-{key}.jsonl"


def text_samples(path: Path, tokenizer, count: int, length: int = 256) -> list[TargetAnswer]:
    """Human text in the answers format, for scoring next-token prediction on held-out text (Tandem's
    Table 1): ``count`` windows of ``length`` tokens spread evenly through the documents of ``path``
    (a ``text`` JSONL, optionally gzipped; a few long books give many windows); the first token of a
    window is its "prompt", the rest is scored."""
    file = Path(path)
    if not file.is_file():
        raise DataNotFoundError(f"text file not found: {file}")
    opener = gzip.open if file.name.endswith(".gz") else open
    with opener(file, "rt", encoding="utf-8") as lines:
        texts = [t for t in (json.loads(line).get("text", "") for line in lines) if len(t) > 200]
    if not texts:
        raise EmptyDataError(f"no documents with text found in {file}")
    per_document = -(-count // len(texts))
    samples = []
    for text in texts:
        step = max(1, len(text) // (per_document + 1))
        for start in range(step, len(text), step)[:per_document]:
            window = text[start : start + length * 8]
            ids = tokenizer(window, add_special_tokens=False)["input_ids"][1 : length + 1]
            if len(ids) > 1:  # the first token may be a cut word; it was dropped
                samples.append(TargetAnswer(ids[:1], ids[1:]))
    return samples[:: max(1, len(samples) // count)][:count]


def write_answers(path: Path, answers: Sequence[TargetAnswer]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(a.__dict__) + "\n" for a in answers))


def read_answers(path: Path) -> list[TargetAnswer]:
    """A cache file written by :func:`generate_answers` (``specdec data answers`` prints its path)."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"answers file not found: {path}")
    answers = _read_gzipped(path) if path.name.endswith(".gz") else _read_complete(path)
    if not answers:
        raise EmptyDataError(f"answers file {path} holds no answers")
    return answers


def _read_gzipped(path: Path) -> list[TargetAnswer]:
    """A gzipped answers file (the committed batches): read whole and never repaired, since only a cache
    file that a run was appending to can end in a torn line."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            return [TargetAnswer(**json.loads(line)) for line in lines]
    except (OSError, EOFError, ValueError, TypeError) as err:
        raise InvalidArgumentError(f"answers file {path} is not a gzipped answers JSONL ({err})") from err


def distinct_answers(answers: Sequence[TargetAnswer]) -> list[TargetAnswer]:
    """The first answer to each distinct prompt, in order: separate runs draw some of the same requests,
    and a repeat counted twice is seen twice in training or lands in both the training and held-out parts."""
    seen: set[tuple[int, ...]] = set()
    kept = []
    for answer in answers:
        if (key := tuple(answer.prompt_ids)) not in seen:
            seen.add(key)
            kept.append(answer)
    return kept


def _append(path: Path, rows: list[dict]) -> None:
    """Add rows to a cache file and flush them to disk, so a killed run loses only what it was writing."""
    with path.open("a") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows))
        f.flush()
        os.fsync(f.fileno())


def _read_complete(path: Path, parse=lambda row: TargetAnswer(**row)) -> list:
    """The rows fully written to ``path``; a torn last line (a run killed mid-write) is cut off."""
    if not path.is_file():
        return []
    answers, kept = [], 0
    raw = path.read_bytes()
    for line in raw.splitlines(keepends=True):
        try:
            answers.append(parse(json.loads(line)))
        except (ValueError, TypeError, KeyError):
            break
        if not line.endswith(b"\n"):
            answers.pop()
            break
        kept += len(line)
    if kept < len(raw):
        with path.open("r+b") as f:
            f.truncate(kept)
    return answers
