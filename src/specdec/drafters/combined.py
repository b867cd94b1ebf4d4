"""Prompt lookup where the context has a match, a trained drafter (a draft model or an EAGLE-3 head)
elsewhere.

The two are good at different text: lookup guesses long copied spans for free (summaries, RAG, edits,
code, multi-turn chat), a trained drafter guesses new text at a small cost per token. Each step, the rows'
contexts are searched first; when every row's last tokens (at least ``min_ngram`` of them: a single
token repeats everywhere and predicts little) occurred earlier, the tokens that followed are the
draft and the model runs nothing (it catches up on what was kept at its next proposal); otherwise
the model drafts for every row. One source per step keeps each draft a single model's or lookup's,
so verification is the usual exact rule: lookup tokens are one-hot (p = 1), model tokens carry p.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.drafters.model import ModelDrafter
from specdec.drafters.prompt_lookup import NgramIndex, lookup_draft
from specdec.engine import ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.sampling import Draws, Sampling


class LookupThenModelDrafter(Drafter):
    """Prompt lookup (n-grams of ``min_ngram`` to ``max_ngram`` tokens) first, ``model`` elsewhere: a draft
    model or EAGLE-3 head (one that can ``adopt`` a draft it did not make), chain or tree (``tree-K:``:
    the model's steps verify a tree, lookup's a chain)."""

    has_confidence = True  # BiLD's fallback applies to the model's drafts; lookup steps ignore it

    def __init__(
        self,
        model: ModelDrafter | Eagle3Drafter,
        *,
        max_ngram: int = 3,
        min_ngram: int = 2,
        name: str = "lookup+",
    ):
        if not isinstance(model, ModelDrafter | Eagle3Drafter):
            raise InvalidArgumentError(
                "lookup+MODEL needs a draft model or an EAGLE-3 head (no Tandem, no BiTA)"
            )
        if not 1 <= min_ngram <= max_ngram:
            raise InvalidArgumentError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.model, self.max_ngram, self.min_ngram, self.name = model, max_ngram, min_ngram, name
        self.target_hidden_layers = model.target_hidden_layers  # an EAGLE-3 head's features
        self.proposes_trees = model.proposes_trees
        self.lookup_steps = self.model_steps = 0

    @property
    def draft_calls(self) -> int:  # the model's forwards; lookup costs none
        return self.model.draft_calls

    @property
    def context_size(self) -> int | None:
        return self.model.context_size

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        self.model.validate(target, tokenizer)

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.model.begin(prompts, prefill)
        self.history = [NgramIndex(p, self.max_ngram) for p in prompts]
        self._last = torch.zeros(len(prompts), 0, dtype=torch.long)

    def next_source(self) -> str:
        """The next step's source: lookup where every row's context has a match, else the model."""
        found = all(h.continuation(self.max_ngram, self.min_ngram, 1) for h in self.history)
        return "lookup" if found else "model"

    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        draft = lookup_draft(self.history, gamma, self.max_ngram, self.min_ngram)
        if gamma == 0 or not bool((draft.row_lengths() > 0).all()):
            draft = self.model.propose(gamma, sampling, draws, min_confidence=min_confidence)
            self.model_steps += int(gamma > 0)
        else:
            self.model.adopt(draft.tokens)
            self.lookup_steps += 1
        self._last = draft.tokens
        return draft

    def update(self, feedback: Feedback) -> None:
        self.model.update(feedback)
        settled = zip(feedback.num_accepted.tolist(), feedback.next_token.tolist(), strict=True)
        for row, (n, t) in enumerate(settled):
            nodes = list(range(n)) if feedback.path is None else feedback.path[row, :n].tolist()
            self.history[row].extend([*self._last[row, nodes].tolist(), t])

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.model.admit(prompts, prefill)
        self.history += [NgramIndex(p, self.max_ngram) for p in prompts]
        self._last = torch.cat([self._last, self._last.new_zeros(len(prompts), self._last.shape[1])])

    def select_rows(self, rows: torch.Tensor) -> None:
        self.model.select_rows(rows)
        self.history = [self.history[i] for i in rows.tolist()]
        self._last = self._last[rows]
