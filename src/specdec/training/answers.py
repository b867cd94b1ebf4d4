"""Text the target writes itself: prompts answered greedily by the target, generated once and cached.

A drafter is asked to predict the target's own outputs, so that is what it learns best from: BiLD's
sequence-level alignment (§3.5.1), distilled drafts, Tandem and BiTA all train on the target's
answers to chat-style prompts built from the training corpora or written by the target itself
(:func:`~specdec.training.prompts.self_written_prompts`), never the evaluation prompts. At every
answer position the label *is* the target's greedy choice. Generation is the expensive part, so it
runs in large batches and is appended to one cache file batch by batch, under a key of everything
that determines it (target, prompts, length, chat template): an interrupted run resumes where it
stopped, and every later run, of any method, reuses it. A cache file can be shared as its answers alone
(:func:`export_answer_ids`) and rebuilt from them and the prompts' source (:func:`restore_answers`).
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
from specdec.pipeline import Pipeline

# Prompts are answered sorted by length within consecutive chunks of this many: batches of similar
# length (little padding to attend over), and a run stopped early still holds prompts of every length
# (sorting the whole source would leave a stopped run with only its shortest prompts).
LENGTH_CHUNK = 1024
# Answers shared without their prompts (see export_answer_ids) are listed, with digests, in this file.
ANSWER_IDS_MANIFEST = "answer-ids-manifest.json"


@dataclass
class TargetAnswer:
    prompt_ids: list[int]  # the prompt as the target saw it (chat template applied)
    answer_ids: list[int]  # its greedy answer


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
    answers_from: Path | None = None,
) -> list[TargetAnswer]:
    """Greedy target answers to ``prompts`` (user texts, or chats ending with a user turn; chat template
    applied), in prompt order.

    ``source`` names the target as generated (model and dtype): it is part of the cache key. Prompts
    are answered ``batch_size`` at a time in :data:`LENGTH_CHUNK` chunks, shortest first within each
    (rows of a batch share the cache's width, so one long prompt would make every row attend over its
    padding), and each batch is appended (flushed to disk) to the cache file in that order: a killed
    run loses at most one batch, and a rerun reads back what is there and continues. ``answers_from``: a
    folder of exported answer ids (:func:`export_answer_ids`) to rebuild the cache file from
    before anything is generated.
    """
    path = answers_path(pipeline, prompts, source=source, max_new_tokens=max_new_tokens, cache_dir=cache_dir)
    ids = [pipeline.encode(p, chat=True) for p in prompts]
    order = [
        i
        for start in range(0, len(ids), LENGTH_CHUNK)
        for i in sorted(range(start, min(start + LENGTH_CHUNK, len(ids))), key=lambda i: len(ids[i]))
    ]
    if answers_from is not None:
        restore_answers(path, [ids[i] for i in order], answers_from)
    answers = read_complete(path)
    if progress is not None and answers:
        progress(len(answers))
    path.parent.mkdir(parents=True, exist_ok=True)
    for start in range(len(answers), len(order), batch_size):
        batch = order[start : start + batch_size]
        out = pipeline.generate([ids[i] for i in batch], method="plain", max_new_tokens=max_new_tokens)
        new = [TargetAnswer(ids[i], answer) for i, answer in zip(batch, out.token_ids, strict=True)]
        append_rows(path, [a.__dict__ for a in new])
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
    answers = _read_gzipped(path) if path.name.endswith(".gz") else read_complete(path)
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


def append_rows(path: Path, rows: list[dict]) -> None:
    """Add rows to a cache file and flush them to disk, so a killed run loses only what it was writing."""
    with path.open("a") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows))
        f.flush()
        os.fsync(f.fileno())


def read_complete(path: Path, parse=lambda row: TargetAnswer(**row)) -> list:
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


def ids_file(folder: Path, cache_file: Path) -> Path:
    """Where the answer ids of ``cache_file`` (``answers-<key>.jsonl``) are kept in ``folder``."""
    return Path(folder) / f"{cache_file.stem.replace('answers-', 'answer-ids-', 1)}.jsonl.gz"


def export_answer_ids(cache_file: Path, folder: Path) -> Path:
    """Write the answer ids of every complete row of ``cache_file`` (in its order) to ``folder`` and
    record the rows' count, answer tokens and sha256 in the folder's manifest.

    The target's answers to prompts a project may not redistribute (ShareGPT's user turns, say) are
    still its own words: shared this way, without the prompts, :func:`restore_answers` pairs them again
    with prompts tokenized from the user's own copy of the source, and the answers cost a reader seconds
    instead of a GPU lease's minutes or a CPU's hours.
    """
    cache_file = Path(cache_file)
    rows = read_complete(cache_file)
    if not rows:
        raise DataNotFoundError(f"no complete answers in {cache_file}")
    text = "".join(json.dumps(row.__dict__) + "\n" for row in rows)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = ids_file(folder, cache_file)
    with out.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write("".join(json.dumps(row.answer_ids) + "\n" for row in rows).encode())
    manifest = _read_manifest(folder)
    manifest[cache_file.name] = {
        "rows": len(rows),
        "answer_tokens": sum(len(row.answer_ids) for row in rows),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    (folder / ANSWER_IDS_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return out


def restore_answers(cache_file: Path, prompt_ids: Sequence[list[int]], folder: Path) -> int:
    """Rebuild ``cache_file`` from ``folder``'s answer ids, ``prompt_ids`` being the prompts in the cache
    file's order; the rows restored (0 where the folder has none for it or the cache already holds as
    many). Raises :class:`InvalidArgumentError` where the rebuilt rows' digest is not the recorded one:
    another source file, tokenizer or chat template would put the answers under the wrong prompts."""
    cache_file = Path(cache_file)
    entry = _read_manifest(Path(folder)).get(cache_file.name)
    if entry is None or len(read_complete(cache_file)) >= entry["rows"]:
        return 0
    source = ids_file(folder, cache_file)
    if not source.is_file():
        raise DataNotFoundError(f"{folder}'s manifest lists {cache_file.name} but {source.name} is missing")
    try:
        with gzip.open(source, "rt", encoding="utf-8") as lines:
            answers = [json.loads(line) for line in lines]
    except (OSError, EOFError, ValueError) as err:
        raise InvalidArgumentError(f"{source} is not a gzipped JSONL of answer ids ({err})") from err
    if len(answers) != entry["rows"] or len(answers) > len(prompt_ids):
        raise InvalidArgumentError(
            f"{source} holds {len(answers)} answers for {len(prompt_ids)} prompts (manifest: {entry['rows']})"
        )
    rows = [{"prompt_ids": list(p), "answer_ids": a} for p, a in zip(prompt_ids, answers, strict=False)]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if hashlib.sha256(text.encode()).hexdigest() != entry["sha256"]:
        raise InvalidArgumentError(
            f"the answers in {folder} do not rebuild {cache_file.name}: its prompts differ from those "
            "they answered (another source file, tokenizer or chat template)"
        )
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    partial = cache_file.with_suffix(".restoring")
    partial.write_text(text)
    os.replace(partial, cache_file)
    return len(rows)


def _read_manifest(folder: Path) -> dict:
    path = folder / ANSWER_IDS_MANIFEST
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError as err:
        raise InvalidArgumentError(f"{path} is not JSON ({err})") from err
