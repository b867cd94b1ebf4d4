"""Text corpora and token streams for training drafts.

Files are plain text (``.txt``) or JSON lines (``.jsonl`` / ``.jsonl.gz``) with a text field, the
format of ``../shared/data/train``. Documents are tokenised once, joined with EOS into one stream,
and training windows are cut at positions drawn from a generator seeded by (seed, step), so the
batch at a given step never depends on what ran before it: resuming is exact.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from specdec.errors import DataNotFoundError, EmptyDataError, InvalidArgumentError


def read_documents(path: str | Path, text_field: str = "text", max_chars: int | None = None) -> list[str]:
    """Documents of one corpus file, stopping once ``max_chars`` characters were read."""
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"corpus file not found: {path}")
    docs, total = [], 0
    for doc in _iter_documents(path, text_field):
        if not doc.strip():
            continue
        if max_chars is not None and total + len(doc) > max_chars:
            docs.append(doc[: max_chars - total])
            break
        docs.append(doc)
        total += len(doc)
    if not docs:
        raise EmptyDataError(f"corpus file {path} contains no text (field {text_field!r} for JSON lines)")
    return docs


def _iter_documents(path: Path, text_field: str) -> Iterable[str]:
    name = path.name
    if name.endswith((".jsonl", ".jsonl.gz")):
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    row = json.loads(line)
                    if text_field not in row:
                        raise EmptyDataError(
                            f"{path}: a line has no field {text_field!r} (fields: {sorted(row)})"
                        )
                    yield str(row[text_field])
    else:
        yield path.read_text(encoding="utf-8")


def tokenize_stream(docs: Sequence[str], tokenizer: PreTrainedTokenizerBase) -> torch.Tensor:
    """All documents as one 1-D token stream, each followed by EOS so windows see document ends."""
    eos = tokenizer.eos_token_id
    ids: list[int] = []
    for doc in docs:
        ids.extend(tokenizer(doc, add_special_tokens=False)["input_ids"])
        if eos is not None:
            ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


def split_stream(stream: torch.Tensor, heldout_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    if not 0.0 < heldout_fraction < 1.0:
        raise InvalidArgumentError(f"heldout_fraction must be in (0, 1), got {heldout_fraction}")
    cut = int(len(stream) * (1.0 - heldout_fraction))
    return stream[:cut], stream[cut:]


def sample_windows(stream: torch.Tensor, batch_size: int, seq_len: int, seed: int, step: int) -> torch.Tensor:
    """``[batch, seq_len]`` windows at random offsets; the same (seed, step) always gives the same batch."""
    if len(stream) <= seq_len:
        raise EmptyDataError(
            f"token stream of {len(stream)} tokens is shorter than one window ({seq_len} + 1)"
        )
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(0, len(stream) - seq_len, (batch_size,), generator=generator)
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()])


def fixed_windows(stream: torch.Tensor, count: int, seq_len: int) -> torch.Tensor:
    """Evenly spaced, non-random windows: the held-out set every evaluation sees."""
    if len(stream) <= seq_len:
        raise EmptyDataError(f"held-out stream of {len(stream)} tokens is shorter than one window")
    starts = torch.linspace(0, len(stream) - seq_len - 1, count).long().unique()
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()])
