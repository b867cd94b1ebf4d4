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
    """Tokens that followed the most recent earlier occurrence of the longest matching suffix n-gram, by a
    scan of ``history``: the reference that :class:`NgramIndex` answers without scanning."""
    size = len(history)
    for n in range(min(max_ngram, size - 1), min_ngram - 1, -1):
        suffix = list(history[size - n :])
        for start in range(size - n - 1, -1, -1):
            if list(history[start : start + n]) == suffix:
                return list(history[start + n : start + n + length])
    return []


class NgramIndex:
    """One row's context, with where each of its n-grams (n ≤ ``max_ngram``) last occurred with a token
    after it: :meth:`continuation` answers what :func:`lookup_continuation` answers, in a few dictionary
    reads per step instead of a scan of the whole context. A scan cost ~0.3 ms per row of 1,500
    tokens, so at 32 rows a combined drafter's search (every step, drafting or not) cost ~10 ms of a
    ~200 ms plain step on a 2-core CPU (2026-11-26); the index 0.5 µs per row."""

    def __init__(self, tokens: Sequence[int], max_ngram: int, prompt_only: bool = False):
        self.tokens: list[int] = []
        self.max_ngram = max_ngram
        self._last: list[dict[tuple[int, ...], int]] = [{} for _ in range(max_ngram + 1)]
        self._copy_end: int | None = None  # prompt only: later tokens extend the suffix, not the index
        self.extend(tokens)
        if prompt_only:
            self._copy_end = len(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        """Append ``tokens``; each one becomes the continuation of the n-grams that end just before it."""
        for token in tokens:
            end = len(self.tokens)
            self.tokens.append(int(token))
            if self._copy_end is not None:
                continue
            for n in range(1, min(self.max_ngram, end) + 1):
                self._last[n][tuple(self.tokens[end - n : end])] = end - n

    def continuation(self, max_ngram: int, min_ngram: int, length: int) -> list[int]:
        """Up to ``length`` tokens that followed the most recent earlier occurrence of the longest suffix
        n-gram (``min_ngram`` ≤ n ≤ ``max_ngram``) that occurred before (in the prompt, for a prompt-only
        index: the continuation then ends where the prompt does); [] without one."""
        size = len(self.tokens)
        for n in range(min(max_ngram, self.max_ngram, size - 1), min_ngram - 1, -1):
            start = self._last[n].get(tuple(self.tokens[size - n :]))
            if start is not None:
                end = size if self._copy_end is None else self._copy_end
                return self.tokens[start + n : min(start + n + length, end)]
        return []


def lookup_draft(histories: Sequence[NgramIndex], gamma: int, max_ngram: int, min_ngram: int) -> Draft:
    """Each row's lookup guess of up to ``gamma`` tokens (none without a match in its context), one draft."""
    guesses = [h.continuation(max_ngram, min_ngram, gamma) if gamma else [] for h in histories]
    tokens = torch.zeros(len(guesses), gamma, dtype=torch.long)
    for row, guess in enumerate(guesses):
        tokens[row, : len(guess)] = torch.tensor(guess, dtype=torch.long)
    return Draft(tokens=tokens, lengths=torch.tensor([len(g) for g in guesses], dtype=torch.long))


class PromptLookupDrafter(Drafter):
    """Guesses by n-gram lookup in each row's context. ``prompt_only`` copies from the prompt alone, never
    from the answer written so far: under a lossy rule (BiLD) lookup into the answer itself proposes its
    own last phrases again, which a looser accept test keeps, and the text loops (17 of 30 Spec-Bench
    chat answers at α_RB 5 had over 10 % repeated 4-grams, 6 with plain decoding; benchmarks/CAMPAIGN.md,
    forty-eighth session). Lossless verification needs no such care."""

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1, prompt_only: bool = False):
        if not 1 <= min_ngram <= max_ngram:
            raise InvalidArgumentError(
                f"need 1 <= min_ngram <= max_ngram, got min_ngram={min_ngram}, max_ngram={max_ngram}"
            )
        self.max_ngram, self.min_ngram, self.prompt_only = max_ngram, min_ngram, prompt_only
        self.name = "prompt-only-lookup" if prompt_only else "prompt-lookup"

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.draft_calls = 0
        self.history = [NgramIndex(p, self.max_ngram, self.prompt_only) for p in prompts]

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
        self.history += [NgramIndex(p, self.max_ngram, self.prompt_only) for p in prompts]

    def select_rows(self, rows: torch.Tensor) -> None:
        self.history = [self.history[i] for i in rows.tolist()]
