"""When a row is done, and what each row has produced so far."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from specdec.sampling import KeyedDraws, RowSampling, Sampling, SamplingConfig

GREEDY = SamplingConfig()

# (row index in the caller's prompt list, new token ids, True for each token that was an accepted draft token)
StreamCallback = Callable[[int, list[int], list[bool]], None]


class RowState(Protocol):
    """Anything holding per-row state of a batch (engines, drafters)."""

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep these batch positions, in this order (new position i holds old position ``rows[i]``)."""


@dataclass(frozen=True)
class StopCriteria:
    max_new_tokens: int
    eos_token_ids: frozenset[int] = frozenset()
    stop_strings: tuple[str, ...] = ()
    decode: Callable[[list[int]], str] | None = None

    def first_stop(self, tokens: list[int], start: int) -> tuple[int, str] | None:
        """Scan ``tokens[start:]``; return (length to keep, reason) at the first stop, if any."""
        # A stop string can only complete in the last few tokens; decoding that tail is enough.
        tail = 8 + max((len(s) for s in self.stop_strings), default=0)
        for i in range(start, len(tokens)):
            if tokens[i] in self.eos_token_ids:
                return i + 1, "eos"
            if self.stop_strings and self.decode is not None:
                text = self.decode(tokens[max(0, i + 1 - tail) : i + 1])
                if any(s in text for s in self.stop_strings):
                    return i + 1, "stop_string"
            if i + 1 >= self.max_new_tokens:
                return i + 1, "length"
        return None


class Rows:
    """Per-row outputs, pending tokens, and the map from engine batch positions to the caller's rows.

    Invariant between steps: the engines hold every token of an active row but its pending one (the
    last token emitted, or the prompt's last token before the first step), which the next step feeds.
    """

    def __init__(
        self,
        prompts: Sequence[Sequence[int]],
        stop: StopCriteria,
        keys: Sequence[int],
        callback: StreamCallback | None = None,
        sampling: Sampling = GREEDY,
        draft_cap: int | None = None,
        thresholds: tuple[float, float] | None = None,
    ):
        self.tokens: list[list[int]] = []
        self.from_draft: list[list[bool]] = []
        self.finish_reasons: list[str | None] = []
        self.active: list[int] = []
        self.stops: list[StopCriteria] = []
        self.keys: list[int] = []
        self.configs: list[SamplingConfig] = []
        self.draft_caps: list[int | None] = []  # most draft tokens a row verifies per step (None: no cap)
        self.thresholds: list[tuple[float, float] | None] = []  # own BiLD (α_FB, α_RB); None: the method's
        self.pending = torch.zeros(0, dtype=torch.long)
        self.callback = callback
        self.admit(prompts, keys, stop, sampling, draft_cap, thresholds)

    def admit(
        self,
        prompts: Sequence[Sequence[int]],
        keys: Sequence[int],
        stop: StopCriteria,
        sampling: Sampling,
        draft_cap: int | None = None,
        thresholds: tuple[float, float] | None = None,
    ) -> list[int]:
        """Add rows (requests joining between steps, with their noise keys, stop criteria, sampling —
        one config for all, or a :class:`RowSampling` of one each — a cap on the draft tokens they
        verify per step, 0 for none, and their own BiLD thresholds) after the active ones; their row
        ids."""
        first = len(self.tokens)
        new = list(range(first, first + len(prompts)))
        self.draft_caps += [draft_cap] * len(new)
        self.thresholds += [thresholds] * len(new)
        self.tokens += [[] for _ in new]
        self.from_draft += [[] for _ in new]
        self.finish_reasons += [None] * len(new)
        self.stops += [stop] * len(new)
        self.keys += list(keys)
        self.configs += list(sampling.configs) if isinstance(sampling, RowSampling) else [sampling] * len(new)
        self.active += new
        self.pending = torch.cat([self.pending, torch.tensor([p[-1] for p in prompts], dtype=torch.long)])
        return new

    def remaining(self) -> list[int]:
        """New tokens each active row may still produce."""
        return [self.stops[row].max_new_tokens - len(self.tokens[row]) for row in self.active]

    def sampling(self) -> Sampling:
        """The active rows' sampling: one config when they share it, else one per row."""
        configs = [self.configs[row] for row in self.active]
        if all(c == configs[0] for c in configs[1:]) and configs:
            return configs[0]
        return RowSampling(tuple(configs))

    def draws(self) -> KeyedDraws:
        """This step's randomness: offset 0 is each active row's next output position."""
        return KeyedDraws(
            [self.keys[row] for row in self.active], [len(self.tokens[row]) for row in self.active]
        )

    def emit(self, new_tokens: Sequence[list[int]], num_from_draft: Sequence[int]) -> list[int]:
        """Append each active row's tokens (the last one becomes its pending token); return the batch
        positions of rows that just finished."""
        finished = []
        for pos, (row, new) in enumerate(zip(self.active, new_tokens, strict=True)):
            start = len(self.tokens[row])
            flags = [i < num_from_draft[pos] for i in range(len(new))]
            self.tokens[row].extend(new)
            self.from_draft[row].extend(flags)
            stop = self.stops[row].first_stop(self.tokens[row], start)
            if stop is not None:
                keep, self.finish_reasons[row] = stop
                del self.tokens[row][keep:], self.from_draft[row][keep:]
                finished.append(pos)
            if self.callback is not None:
                self.callback(row, self.tokens[row][start:], self.from_draft[row][start:])
        self.pending = torch.tensor([new[-1] for new in new_tokens], dtype=torch.long)
        return finished

    def finish(self, positions: Sequence[int], reason: str) -> None:
        for pos in positions:
            self.finish_reasons[self.active[pos]] = reason

    def drop(self, positions: Sequence[int], *states: RowState) -> None:
        """Remove finished batch positions here and from every engine / drafter in ``states``."""
        keep = fill_holes(len(self.active), set(positions))
        self.active = [self.active[pos] for pos in keep]
        index = torch.tensor(keep, dtype=torch.long)  # empty when every row finished: all slots freed
        self.pending = self.pending[index]
        for state in states:
            state.select_rows(index)


def fill_holes(size: int, gone: set[int]) -> list[int]:
    """The batch positions that stay, in their new order: each one stays where it is, except that the
    places of departed rows below the new size are taken by the rows beyond it. The row a request is on
    may change; its row id does not. Engines then copy only the moved rows' caches, not every row's
    (:meth:`SlotCache.select_rows`)."""
    keep = [pos for pos in range(size) if pos not in gone]
    new_size = len(keep)
    holes = [pos for pos in range(new_size) if pos in gone]
    order = list(range(new_size))
    for hole, pos in zip(holes, [pos for pos in keep if pos >= new_size], strict=True):
        order[hole] = pos
    return order
