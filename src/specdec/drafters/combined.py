"""Prompt lookup where the context has a match, a trained drafter elsewhere: a draft model or an
EAGLE-3 head (:class:`LookupThenModelDrafter`), or a BiTA adapter on the target itself
(:class:`LookupThenBiTADrafter`).

The two are good at different text: lookup guesses long copied spans for free (summaries, RAG, edits,
code, multi-turn chat), a trained drafter guesses new text at a small cost per token. Each step, the rows'
contexts are searched first; when every row's last tokens (at least ``min_ngram`` of them: a single
token repeats everywhere and predicts little) occurred earlier, the tokens that followed are the
draft and the trained drafter guesses nothing (BiTA's masks still ride on lookup's chain); otherwise it
drafts for every row. One source per step
keeps each draft a single source's, so verification is the usual exact rule: lookup tokens are one-hot
(p = 1), model tokens carry p.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.drafters.bita import BiTADrafter
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.drafters.model import ModelDrafter
from specdec.drafters.prompt_lookup import NgramIndex, lookup_draft
from specdec.engine import Engine, ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.sampling import Draws, Sampling

#: lookup tokens a lookup+bita step verifies at most: each adds itself and a mask group to the block
BITA_LOOKUP_TOKENS = 4


class LookupFirst(Drafter):
    """What both combined drafters share: each row's context as an n-gram index, kept in step with what
    the target settles, a count of the steps each source drafted, and what the inner drafter asks of the
    target (hidden states, reserved slots, given embeddings, its engine)."""

    def __init__(self, inner: Drafter, max_ngram: int, min_ngram: int, max_lookup: int | None, name: str):
        if not 1 <= min_ngram <= max_ngram:
            raise InvalidArgumentError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        if max_lookup is not None and (
            isinstance(max_lookup, bool) or not isinstance(max_lookup, int) or max_lookup < 1
        ):
            raise InvalidArgumentError(f"max_lookup must be an integer >= 1 or None, got {max_lookup!r}")
        self.inner, self.max_ngram, self.min_ngram, self.name = inner, max_ngram, min_ngram, name
        self.max_lookup = max_lookup  # lookup tokens a step drafts at most (None: γ)
        self.proposes_trees = inner.proposes_trees
        self.target_hidden_layers = inner.target_hidden_layers  # an EAGLE-3 head's features
        self.reserved_slots, self.gives_embeddings = inner.reserved_slots, inner.gives_embeddings  # BiTA's
        self.lookup_steps = self.model_steps = 0

    @property
    def draft_calls(self) -> int:  # the model's forwards; lookup costs none
        return self.inner.draft_calls

    @property
    def context_size(self) -> int | None:
        return self.inner.context_size

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        self.inner.validate(target, tokenizer)

    def attach(self, engine: Engine) -> None:
        self.inner.attach(engine)

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.inner.begin(prompts, prefill)
        self.history = [NgramIndex(p, self.max_ngram) for p in prompts]
        self._last = torch.zeros(len(prompts), 0, dtype=torch.long)

    def lookup(self, gamma: int) -> Draft | None:
        """Lookup's draft of up to ``gamma`` tokens (``max_lookup`` at most), if every row has one."""
        length = gamma if self.max_lookup is None else min(gamma, self.max_lookup)
        if length <= 0:
            return None
        draft = lookup_draft(self.history, length, self.max_ngram, self.min_ngram)
        return draft if bool((draft.row_lengths() > 0).all()) else None

    def _sourced(self, draft: Draft, source: str, drafted: bool = True) -> Draft:
        """Count a step ``source`` drafted (``drafted``: not a plain step) and remember its tokens, for the
        update."""
        if source == "lookup":
            self.lookup_steps += 1
        else:
            self.model_steps += int(drafted)
        self._last = draft.tokens
        return draft

    def update(self, feedback: Feedback) -> None:
        self.inner.update(feedback)
        settled = zip(feedback.num_accepted.tolist(), feedback.next_token.tolist(), strict=True)
        for row, (n, t) in enumerate(settled):
            nodes = list(range(n)) if feedback.path is None else feedback.path[row, :n].tolist()
            self.history[row].extend([*self._last[row, nodes].tolist(), t])

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.inner.admit(prompts, prefill)
        self.history += [NgramIndex(p, self.max_ngram) for p in prompts]
        self._last = torch.cat([self._last, self._last.new_zeros(len(prompts), self._last.shape[1])])

    def select_rows(self, rows: torch.Tensor) -> None:
        self.inner.select_rows(rows)
        self.history = [self.history[i] for i in rows.tolist()]
        self._last = self._last[rows]


class LookupThenModelDrafter(LookupFirst):
    """Prompt lookup (n-grams of ``min_ngram`` to ``max_ngram`` tokens) first, ``model`` elsewhere: a draft
    model or EAGLE-3 head (one that can ``adopt`` a draft it did not make, and catches up on what the
    target kept of it at its next proposal), chain or tree (``tree-K:``: the model's steps verify a tree,
    lookup's a chain). γ comes from each source's own policy (``max_lookup``: lookup's at most)."""

    has_confidence = True  # BiLD's fallback applies to the model's drafts; lookup steps ignore it

    def __init__(
        self,
        model: ModelDrafter | Eagle3Drafter,
        *,
        max_ngram: int = 3,
        min_ngram: int = 2,
        max_lookup: int | None = None,
        name: str = "lookup+",
    ):
        if not isinstance(model, ModelDrafter | Eagle3Drafter):
            raise InvalidArgumentError(
                "lookup+MODEL needs a draft model or an EAGLE-3 head (lookup+bita: for a BiTA adapter)"
            )
        super().__init__(model, max_ngram, min_ngram, max_lookup, name)
        self.model = model

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
        draft = self.lookup(gamma)
        if draft is None:
            draft = self.model.propose(gamma, sampling, draws, min_confidence=min_confidence)
            return self._sourced(draft, "model", gamma > 0)
        self.model.adopt(draft.tokens)
        return self._sourced(draft, "lookup")


class LookupThenBiTADrafter(LookupFirst):
    """Prompt lookup first, a BiTA adapter's tree elsewhere, both verified by the target's one pass.

    A lookup step's chain carries BiTA's mask groups too (after the pending token and after each lookup
    token), so wherever a row's kept tokens end, the next step has the adapter's candidates from exactly
    that context, as after a tree step. The block is the drafter's own shape (no γ policy): BiTA's tree,
    or L ≤ ``max_lookup`` lookup tokens and their masks, a block of 1 + L + (L + 1) · depth positions
    reaching L + depth positions past the pending token (``block_positions``). The rows of a batch share
    one chain length, the shortest row's: each lookup token costs every row two positions."""

    def __init__(
        self,
        bita: BiTADrafter,
        *,
        max_ngram: int = 3,
        min_ngram: int = 2,
        max_lookup: int = BITA_LOOKUP_TOKENS,
        name: str = "lookup+bita",
    ):
        if not isinstance(bita, BiTADrafter):
            raise InvalidArgumentError(f"lookup+bita needs a BiTA drafter, got {type(bita).__name__}")
        if max_lookup is None:  # the block is the drafter's own: no γ policy sizes lookup's chain
            raise InvalidArgumentError("lookup+bita needs a number of lookup tokens a step, got None")
        super().__init__(bita, max_ngram, min_ngram, max_lookup, name)
        self.bita = bita
        # the positions after the pending token the longer of the two blocks reaches: L tokens, then a mask
        self.block_positions = max(bita.block_positions, max_lookup + bita.num_masks)

    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        draft = self.lookup(gamma - self.bita.num_masks)  # room for a mask group after the last token
        if draft is None:
            tree = self.bita.propose(gamma, sampling, draws)
            return self._sourced(tree, "model", tree.extra is not None)  # no masks: a plain step
        chain = self.bita.chain_draft(draft.tokens[:, : int(draft.row_lengths().min())])
        return self._sourced(chain, "lookup")
