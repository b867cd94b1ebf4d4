"""Prompts for the target to answer: chat-style requests built from training corpora (:func:`load_prompts`)
or written by the target itself (:func:`self_written_prompts`, Magpie), never the evaluation prompts (their
answers: :mod:`specdec.training.answers`)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

from specdec.errors import DataNotFoundError, EmptyDataError, InvalidArgumentError
from specdec.inputs import check_count
from specdec.pipeline import Pipeline
from specdec.training.answers import answers_key, append_rows, read_complete

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

# Where a user's message goes in a rendered chat template (found by rendering this in its place).
_USER_TEXT = "\x00specdec-user-text\x00"


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
    rows = read_complete(path, parse=lambda row: {"text": str(row["text"])})
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
        append_rows(path, new)
        rows.extend(new)
        if progress is not None:
            progress(size)
    return list(dict.fromkeys(row["text"] for row in rows if row["text"]))


def _request(opener: str, continuation: str) -> str:
    """The request a row wrote: its opener and what followed, or nothing if it added nothing."""
    if opener and not continuation.strip():
        return ""
    return (opener + continuation).strip()
