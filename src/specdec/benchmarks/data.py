"""Evaluation prompts from ``../shared`` (never a library dependency: callers skip when absent)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from specdec.errors import DataNotFoundError
from specdec.inputs import check_count

#: Spec-Bench's six tasks; its MT-bench part is spread over eight MT-bench categories.
SPEC_BENCH_TASKS = ("mt_bench", "translation", "summarization", "qa", "math_reasoning", "rag")
_NOT_MT_BENCH = set(SPEC_BENCH_TASKS) - {"mt_bench"}


def spec_bench_task(category: str) -> str:
    """The Spec-Bench task of a question's ``category`` (MT-bench's eight categories are one task)."""
    return category if category in _NOT_MT_BENCH else "mt_bench"


def default_shared_dir() -> Path:
    """``../shared`` next to the repository checkout."""
    return Path(__file__).resolve().parents[3].parent / "shared"


def spec_bench_path(shared: Path | None = None) -> Path:
    return (shared or default_shared_dir()) / "data" / "eval" / "spec_bench" / "question.jsonl"


def load_spec_bench(path: Path, per_task: int) -> list[dict]:
    """First turns of a stratified subset: ``per_task`` prompts per task, evenly spaced in each task.

    Returns dicts with ``question_id``, ``task`` and ``prompt``.
    """
    check_count("per_task", per_task)
    if not path.is_file():
        raise DataNotFoundError(
            f"Spec-Bench prompts not found at {path}; they live in ../shared/data/eval/spec_bench "
            "(pass --spec-bench to point elsewhere)"
        )
    by_task: dict[str, list[dict]] = {task: [] for task in SPEC_BENCH_TASKS}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        task = spec_bench_task(row["category"])
        by_task[task].append({"question_id": row["question_id"], "task": task, "prompt": row["turns"][0]})
    chosen = []
    for rows in by_task.values():
        step = max(1, len(rows) // per_task)
        chosen.extend(rows[::step][:per_task])
    return chosen


def prompt_seed(question_id: object) -> int:
    """A sampling seed for one prompt, from a hash of its id: question ids are ints in Spec-Bench and
    strings in users' own files (``"alpaca-0"``), and a seed must be an int in [0, 2**64). The same
    prompt gets the same seed in every run and subset, whatever its position."""
    return int.from_bytes(hashlib.sha256(str(question_id).encode()).digest()[:8], "little")


def cnndm_path(shared: Path | None = None) -> Path:
    return (shared or default_shared_dir()) / "data" / "eval" / "cnndm" / "cnndm_test.jsonl"


SUMMARY_INSTRUCTION = "Summarize this news article in three sentences.\n\n"


def load_cnndm(path: Path, count: int, max_words: int = 300) -> list[dict]:
    """The first ``count`` CNN/DM test articles as summarisation prompts, with their references.

    Articles are cut to ``max_words`` words so a prompt's prefill stays small next to its decoding
    (the quantity BiLD changes); returns dicts with ``id``, ``prompt`` and ``reference``.
    """
    if not path.is_file():
        raise DataNotFoundError(
            f"CNN/DM articles not found at {path}; they live in ../shared/data/eval/cnndm "
            "(pass --cnndm to point elsewhere)"
        )
    rows = [json.loads(line) for line in path.read_text().splitlines()[:count]]
    return [
        {
            "id": row["id"],
            "prompt": SUMMARY_INSTRUCTION + " ".join(row["article"].split()[:max_words]),
            "reference": row["reference"],
        }
        for row in rows
    ]
