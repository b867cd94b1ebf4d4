"""The frozen primary's outputs on the training sequences, computed once and reused by every run.

Tandem reads the primary's hidden states, distillation its logits; recomputing them every epoch (and
for every method) would cost more than the training itself on a CPU. So one pass of the primary over
the training sequences (prompt + the target's own answer) stores, per token: the hidden states at the
requested indices (float16), the top-k logits (float16 values, int32 ids) and whether the next token
is an answer token (the positions the losses train on), plus the log-normaliser of the full logits,
so the stored top-k are exact probabilities q and Σ_top-k min(p, q) an exact lower bound of α.
Arrays are written in shards, each complete or absent (written to a temporary folder, then
renamed), so an interrupted run resumes at the first missing shard; they are read memory-mapped.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel

from specdec.errors import DataNotFoundError, InvalidArgumentError
from specdec.training.answers import TargetAnswer

META = "meta.json"


@dataclass(frozen=True)
class CacheSpec:
    source: str  # the primary as it ran (name and dtype)
    hidden_layers: tuple[int, ...]  # primary hidden-state indices stored (0 = embeddings)
    top_k: int
    max_len: int  # sequences longer than this lose the start of their prompt

    def as_dict(self) -> dict:
        return {**self.__dict__, "hidden_layers": list(self.hidden_layers)}


def sequence_of(answer: TargetAnswer, max_len: int) -> tuple[list[int], list[bool]]:
    """Prompt + answer (cut from the left to ``max_len``), and per position whether the *next* token
    belongs to the answer (what a drafter is trained and evaluated on)."""
    tokens = (answer.prompt_ids + answer.answer_ids)[-max_len:]
    answer_from = len(tokens) - len(answer.answer_ids)
    return tokens, [i + 1 >= answer_from for i in range(len(tokens) - 1)] + [False]


@torch.inference_mode()
def build_primary_cache(
    primary: PreTrainedModel,
    answers: Sequence[TargetAnswer],
    folder: Path,
    spec: CacheSpec,
    *,
    shard_size: int = 256,
    batch_size: int = 16,
    progress=None,
) -> PrimaryCache:
    """Run ``primary`` over every answer's sequence and store what training needs (resumable by shard)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(json.dumps([[a.prompt_ids, a.answer_ids] for a in answers]).encode())
    meta = {
        **spec.as_dict(),
        "sequences": len(answers),
        "shard_size": shard_size,
        "answers_sha256": digest.hexdigest(),  # same answers in the same order, or no resuming
    }
    if (folder / META).is_file() and json.loads((folder / META).read_text()) != meta:
        raise InvalidArgumentError(f"{folder} holds a primary cache built differently; use another folder")
    (folder / META).write_text(json.dumps(meta, indent=1))
    device = next(primary.parameters()).device
    for shard, start in enumerate(range(0, len(answers), shard_size)):
        final = folder / f"shard-{shard:05d}"
        chunk = answers[start : start + shard_size]
        if not final.is_dir():
            arrays = _primary_outputs(primary, chunk, spec, batch_size, device)
            tmp = folder / f".{final.name}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", array)
            os.replace(tmp, final)
        if progress is not None:
            progress(len(chunk))
    return PrimaryCache(folder)


def _primary_outputs(
    primary: PreTrainedModel, answers: Sequence[TargetAnswer], spec: CacheSpec, batch_size: int, device
) -> dict[str, np.ndarray]:
    sequences = [sequence_of(a, spec.max_len) for a in answers]
    parts: dict[str, list[np.ndarray]] = {
        name: [] for name in ("tokens", "next_is_answer", "topk_values", "topk_ids", "logsumexp")
    }
    parts |= {f"hidden-{h}": [] for h in spec.hidden_layers}
    for start in range(0, len(sequences), batch_size):
        batch = sequences[start : start + batch_size]
        width = max(len(t) for t, _ in batch)
        tokens = torch.zeros(len(batch), width, dtype=torch.long)
        valid = torch.zeros(len(batch), width, dtype=torch.long)
        for row, (ids, _) in enumerate(batch):
            tokens[row, : len(ids)] = torch.tensor(ids)
            valid[row, : len(ids)] = 1
        out = primary(tokens.to(device), attention_mask=valid.to(device), output_hidden_states=True)
        logits = out.logits.float()
        values, ids = logits.topk(spec.top_k, dim=-1)
        lse = logits.logsumexp(dim=-1)
        for row, (seq, next_is_answer) in enumerate(batch):
            n = len(seq)
            parts["tokens"].append(np.asarray(seq, dtype=np.int32))
            parts["next_is_answer"].append(np.asarray(next_is_answer, dtype=bool))
            parts["topk_values"].append(values[row, :n].cpu().to(torch.float16).numpy())
            parts["topk_ids"].append(ids[row, :n].cpu().to(torch.int32).numpy())
            parts["logsumexp"].append(lse[row, :n].cpu().numpy())
            for h in spec.hidden_layers:
                parts[f"hidden-{h}"].append(
                    out.hidden_states[h][row, :n].float().cpu().to(torch.float16).numpy()
                )
    lengths = np.asarray([len(t) for t in parts["tokens"]], dtype=np.int64)
    arrays = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    arrays["offsets"] = np.concatenate([[0], np.cumsum(lengths)])
    return arrays


def _read_meta(folder: Path) -> dict:
    """A cache folder's meta, checked complete (every shard written)."""
    if not (folder / META).is_file():
        raise DataNotFoundError(f"no primary cache in {folder} (build one with `specdec data primary`)")
    meta = json.loads((folder / META).read_text())
    shards = [p for p in folder.glob("shard-*") if p.is_dir()]
    complete = -(-meta["sequences"] // meta["shard_size"])
    if len(shards) != complete:
        raise DataNotFoundError(
            f"the primary cache in {folder} is incomplete ({len(shards)}/{complete} shards): "
            "rerun the command that built it to finish"
        )
    return meta


def split(cache: PrimaryCache, fraction: float) -> tuple[Sequence[int], Sequence[int]]:
    """Training and held-out sequence indices: the held-out answers are each folder's last ones (at least
    one each), interleaved folder by folder so any prefix of them spans every source."""
    train: list[int] = []
    tails: list[range] = []
    for part in cache.parts:
        heldout = max(1, int(len(part) * fraction))
        train += part[: len(part) - heldout]
        tails.append(part[len(part) - heldout :])
    if len(tails) == 1:
        return range(len(train)), tails[0]
    return train, [i for group in itertools.zip_longest(*tails) for i in group if i is not None]


def micro_batches(lengths: Sequence[int], max_tokens: int | None) -> list[list[int]]:
    """A step's rows (positions in ``lengths``) grouped shortest first into micro-batches of at most
    ``max_tokens`` padded tokens (rows × their longest; a row longer than that alone); one group, in order,
    without a limit. A batch pads every row to its longest, so a 900-token passage among 256-token chats
    would make the whole step cost 3.5 times as much; sorted groups pay for each length about once."""
    if max_tokens is None:
        return [list(range(len(lengths)))]
    groups: list[list[int]] = [[]]
    for row in sorted(range(len(lengths)), key=lambda r: lengths[r]):
        if groups[-1] and (len(groups[-1]) + 1) * lengths[row] > max_tokens:
            groups.append([])
        groups[-1].append(row)
    return groups


class PrimaryCache:
    """Read access to one cache folder, or several read as one (e.g. caches of different sources):
    per-sequence arrays, and padded training batches as tensors.

    With several folders, sequence indices run through them in order (``parts`` holds each folder's
    range); they must agree on the primary and the top-k, and a batch carries the hidden states they all
    hold.
    """

    def __init__(self, folders: str | Path | Sequence[str | Path]):
        folders = [Path(folders)] if isinstance(folders, (str, Path)) else [Path(f) for f in folders]
        if not folders:
            raise InvalidArgumentError("a primary cache needs at least one folder")
        self.folders = folders
        metas = [_read_meta(folder) for folder in folders]
        for key in ("source", "top_k"):
            if len({json.dumps(m[key]) for m in metas}) > 1:
                raise InvalidArgumentError(
                    f"primary caches read together must agree on {key!r}; got "
                    + ", ".join(f"{f}: {m[key]}" for f, m in zip(folders, metas, strict=True))
                )
        self.meta = metas[0] if len(metas) == 1 else {"parts": metas}
        self.top_k = metas[0]["top_k"]
        self.hidden_layers = tuple(
            h for h in metas[0]["hidden_layers"] if all(h in m["hidden_layers"] for m in metas)
        )
        self._arrays, self.parts = [], []
        for folder, meta in zip(folders, metas, strict=True):
            start = sum(len(part) for part in self.parts)
            shards = sorted(p for p in folder.glob("shard-*") if p.is_dir())
            self._arrays += [{p.stem: np.load(p, mmap_mode="r") for p in s.glob("*.npy")} for s in shards]
            self.parts.append(range(start, start + meta["sequences"]))
        self._index = [
            (s, i) for s, arrays in enumerate(self._arrays) for i in range(len(arrays["offsets"]) - 1)
        ]

    def __len__(self) -> int:
        return len(self._index)

    def sequence(self, index: int) -> dict[str, np.ndarray]:
        shard, i = self._index[index]
        arrays = self._arrays[shard]
        start, end = int(arrays["offsets"][i]), int(arrays["offsets"][i + 1])
        return {name: array[start:end] for name, array in arrays.items() if name != "offsets"}

    def length(self, index: int) -> int:
        """Tokens in sequence ``index`` (prompt and answer), read without loading it."""
        shard, i = self._index[index]
        offsets = self._arrays[shard]["offsets"]
        return int(offsets[i + 1]) - int(offsets[i])

    def tokens(self) -> int:
        """Answer tokens (training targets) in the cache."""
        return int(sum(a["next_is_answer"].sum() for a in self._arrays))

    def batch(self, indices: Sequence[int], device: torch.device | str | None = None) -> dict:
        """Right-padded tensors for these sequences: tokens, valid, next_is_answer, hidden states by index,
        top-k values and ids; on ``device`` when given (the model's: every reader of a batch moves it)."""
        rows = [self.sequence(i) for i in indices]
        width = max(len(r["tokens"]) for r in rows)
        out: dict = {
            "tokens": torch.zeros(len(rows), width, dtype=torch.long),
            "valid": torch.zeros(len(rows), width, dtype=torch.bool),
            "next_is_answer": torch.zeros(len(rows), width, dtype=torch.bool),
            "topk_values": torch.zeros(len(rows), width, self.top_k),
            "topk_ids": torch.zeros(len(rows), width, self.top_k, dtype=torch.long),
            "logsumexp": torch.zeros(len(rows), width),
            "hidden": {},
        }
        for h in self.hidden_layers:
            size = rows[0][f"hidden-{h}"].shape[-1]
            out["hidden"][h] = torch.zeros(len(rows), width, size)
        for row, r in enumerate(rows):
            n = len(r["tokens"])
            out["tokens"][row, :n] = torch.from_numpy(np.array(r["tokens"], dtype=np.int64))
            out["valid"][row, :n] = True
            out["next_is_answer"][row, :n] = torch.from_numpy(np.array(r["next_is_answer"]))
            out["topk_values"][row, :n] = torch.from_numpy(np.array(r["topk_values"], dtype=np.float32))
            out["topk_ids"][row, :n] = torch.from_numpy(np.array(r["topk_ids"], dtype=np.int64))
            out["logsumexp"][row, :n] = torch.from_numpy(np.array(r["logsumexp"], dtype=np.float32))
            for h in self.hidden_layers:
                out["hidden"][h][row, :n] = torch.from_numpy(np.array(r[f"hidden-{h}"], dtype=np.float32))
        if device is None:
            return out
        moved = {k: v.to(device) if torch.is_tensor(v) else v for k, v in out.items()}
        return moved | {"hidden": {h: s.to(device) for h, s in out["hidden"].items()}}
