"""A draft's output head trimmed to the target's most frequent tokens (EAGLE-3's ``d2t`` idea).

A 2-layer draft of a 49k-vocabulary target spends most of its step in the output head (49,152 × 576
multiply-adds per token against ~8M for both layers). Keeping only the N tokens the target writes
most often cuts that N/V-fold. The trimmed head returns full-vocabulary logits with −inf outside
the kept rows, so the draft's p is exactly zero there and every verify rule stays exact: a token the
draft cannot propose is simply never proposed, and the residual max(0, q − p) equals q on it.

Frequencies come from target-written answers (``specdec data draft-vocab``), stored beside the draft
as ``draft_vocab.json``; ``vocab-N:MODEL`` keeps the top N of them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedModel

from specdec.engine.modeling import shallow_copy
from specdec.errors import DataNotFoundError, InvalidArgumentError

VOCAB_FILE = "draft_vocab.json"


def token_counts(answers: Iterable[Sequence[int]]) -> Counter:
    """How often the target wrote each token in its answers (token ids; the prompts are not its text)."""
    counts: Counter = Counter()
    for answer in answers:
        counts.update(answer)
    return counts


def write_vocab_file(folder: Path, counts: Counter, provenance: dict) -> Path:
    """``draft_vocab.json``: token ids by decreasing frequency, their counts, and where they came from."""
    ranked = counts.most_common()
    path = Path(folder) / VOCAB_FILE
    path.write_text(
        json.dumps(
            {
                "token_ids": [t for t, _ in ranked],
                "counts": [c for _, c in ranked],
                "tokens_counted": sum(counts.values()),
                **provenance,
            }
        )
    )
    return path


def top_tokens(folder: Path, size: int, always: Sequence[int] = ()) -> torch.Tensor:
    """The ``size`` most frequent token ids of ``folder``'s vocabulary file (plus ``always``, e.g. EOS),
    sorted ascending."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidArgumentError(f"the trimmed vocabulary needs size >= 1, got {size!r}")
    path = Path(folder) / VOCAB_FILE
    if not path.is_file():
        raise DataNotFoundError(
            f"{path} not found: count the target's tokens first with "
            f"`specdec data draft-vocab --answers FILE --output {folder}`"
        )
    ranked = json.loads(path.read_text())["token_ids"]
    keep = set(ranked[:size]) | {int(t) for t in always if t is not None}
    return torch.tensor(sorted(keep), dtype=torch.long)


class TrimmedHead(nn.Module):
    """The rows ``keep`` of an output head; logits of every other token are −inf (p = 0 there)."""

    def __init__(self, head: nn.Linear, keep: torch.Tensor):
        super().__init__()
        if keep.numel() == 0 or int(keep.min()) < 0 or int(keep.max()) >= head.out_features:
            raise InvalidArgumentError(f"kept token ids must lie in [0, {head.out_features}), got {keep}")
        weight = head.weight.detach()
        self.vocab_size = head.out_features
        self.linear = nn.Linear(head.in_features, len(keep), bias=head.bias is not None)
        self.linear.to(weight.device, weight.dtype)
        with torch.no_grad():
            self.linear.weight.copy_(weight[keep])
            if head.bias is not None:
                self.linear.bias.copy_(head.bias.detach()[keep])
        self.register_buffer("keep", keep.to(weight.device))

    @property
    def out_features(self) -> int:  # what the logits index: the full vocabulary
        return self.vocab_size

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        kept = self.linear(hidden)
        logits = kept.new_full((*kept.shape[:-1], self.vocab_size), float("-inf"))
        return logits.index_copy_(-1, self.keep, kept)


def trim_output_head(model: PreTrainedModel, keep: torch.Tensor) -> PreTrainedModel:
    """A copy of ``model`` (sharing every weight) whose output head is :class:`TrimmedHead`; the
    original stays untouched, as :func:`~specdec.engine.kernels.pack_linear_layers` does."""
    head = model.get_output_embeddings()
    if not isinstance(head, nn.Linear):
        raise InvalidArgumentError(
            f"a trimmed vocabulary needs a linear output head; {type(model).__name__} has "
            f"{type(head).__name__}"
        )
    trimmed = shallow_copy(model)
    trimmed.set_output_embeddings(TrimmedHead(head, keep))
    return trimmed
