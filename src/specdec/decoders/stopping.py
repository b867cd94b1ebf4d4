"""When a row is done, and what each row has produced so far."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

# (row index in the caller's prompt list, new token ids, True for each token that was an accepted draft token)
StreamCallback = Callable[[int, list[int], list[bool]], None]


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
    """Per-row outputs and the map from engine batch positions to the caller's rows."""

    def __init__(self, num_rows: int, stop: StopCriteria, callback: StreamCallback | None = None):
        self.tokens: list[list[int]] = [[] for _ in range(num_rows)]
        self.from_draft: list[list[bool]] = [[] for _ in range(num_rows)]
        self.finish_reasons: list[str | None] = [None] * num_rows
        self.active: list[int] = list(range(num_rows))
        self.stop = stop
        self.callback = callback

    def remaining(self) -> list[int]:
        """New tokens each active row may still produce."""
        return [self.stop.max_new_tokens - len(self.tokens[row]) for row in self.active]

    def emit(self, new_tokens: Sequence[list[int]], num_from_draft: Sequence[int]) -> list[int]:
        """Append each active row's tokens; return batch positions of rows that just finished."""
        finished = []
        for pos, (row, new) in enumerate(zip(self.active, new_tokens, strict=True)):
            start = len(self.tokens[row])
            flags = [i < num_from_draft[pos] for i in range(len(new))]
            self.tokens[row].extend(new)
            self.from_draft[row].extend(flags)
            stop = self.stop.first_stop(self.tokens[row], start)
            if stop is not None:
                keep, self.finish_reasons[row] = stop
                del self.tokens[row][keep:], self.from_draft[row][keep:]
                finished.append(pos)
            if self.callback is not None:
                self.callback(row, self.tokens[row][start:], self.from_draft[row][start:])
        return finished

    def finish(self, positions: Sequence[int], reason: str) -> None:
        for pos in positions:
            self.finish_reasons[self.active[pos]] = reason

    def drop(self, positions: Sequence[int]) -> torch.Tensor | None:
        """Remove finished batch positions; return the positions to keep, or None if none left."""
        gone = set(positions)
        keep = [pos for pos in range(len(self.active)) if pos not in gone]
        self.active = [self.active[pos] for pos in keep]
        return torch.tensor(keep, dtype=torch.long) if keep else None
