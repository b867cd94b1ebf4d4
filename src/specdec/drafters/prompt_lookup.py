"""Model-free drafting by n-gram lookup in the context (prompt lookup decoding).

Summaries, RAG answers, code edits and multi-turn chat copy long spans of their context; when the
last n tokens occurred before, the tokens that followed them then are a free guess now. The
proposal is deterministic, so p is one-hot and verification stays exact under sampling.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.engine import ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.sampling import Draws, Sampling


def lookup_continuation(history: Sequence[int], max_ngram: int, min_ngram: int, length: int) -> list[int]:
    """Tokens that followed the most recent earlier occurrence of the longest matching suffix n-gram."""
    size = len(history)
    for n in range(min(max_ngram, size - 1), min_ngram - 1, -1):
        suffix = list(history[size - n :])
        for start in range(size - n - 1, -1, -1):
            if list(history[start : start + n]) == suffix:
                return list(history[start + n : start + n + length])
    return []


def lookup_draft(histories: Sequence[Sequence[int]], gamma: int, max_ngram: int, min_ngram: int) -> Draft:
    """Each row's lookup guess of up to ``gamma`` tokens (none without a match in its context), one draft."""
    guesses = [lookup_continuation(h, max_ngram, min_ngram, gamma) if gamma else [] for h in histories]
    tokens = torch.zeros(len(guesses), gamma, dtype=torch.long)
    for row, guess in enumerate(guesses):
        tokens[row, : len(guess)] = torch.tensor(guess, dtype=torch.long)
    return Draft(tokens=tokens, lengths=torch.tensor([len(g) for g in guesses], dtype=torch.long))


class PromptLookupDrafter(Drafter):
    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        if not 1 <= min_ngram <= max_ngram:
            raise InvalidArgumentError(
                f"need 1 <= min_ngram <= max_ngram, got min_ngram={min_ngram}, max_ngram={max_ngram}"
            )
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.name = "prompt-lookup"

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.draft_calls = 0
        self.history = [list(p) for p in prompts]

    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        draft = lookup_draft(self.history, gamma, self.max_ngram, self.min_ngram)
        self._last = draft.tokens
        return draft

    def update(self, feedback: Feedback) -> None:
        settled = zip(feedback.num_accepted.tolist(), feedback.next_token.tolist(), strict=True)
        for row, (n, t) in enumerate(settled):
            self.history[row].extend([*self._last[row, :n].tolist(), t])

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.history += [list(p) for p in prompts]

    def select_rows(self, rows: torch.Tensor) -> None:
        self.history = [self.history[i] for i in rows.tolist()]
