"""Token ids to the text a client sees, as they arrive: what is safe to send now, and the stop rule.

A stop string must never reach the client, not even the part of it that arrives before the rest: text
that could still turn out to be the start of a stop string is held back until the next tokens (or the
end) decide. So is an incomplete UTF-8 character (a byte-level token can split one). OpenAI's rule: the
returned text ends before the stop string; the loop has already cut the tokens after the one that
completed it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# The loop's finish reasons in OpenAI's words (an aborted request is never answered)
FINISH_REASONS = {"eos": "stop", "stop_string": "stop", "length": "length", "context": "length"}


class TextStream:
    """One choice's text, decoded incrementally from its token ids."""

    def __init__(self, decode: Callable[[list[int]], str], stops: Sequence[str] = ()):
        self.decode, self.stops = decode, tuple(stops)
        self.ids: list[int] = []
        self.sent = 0  # characters handed out so far
        self.text = ""  # the text so far, cut before a stop string

    def push(self, tokens: Sequence[int], final: bool = False) -> str:
        """Add ``tokens``; the new text that is safe to send (everything left when ``final``)."""
        self.ids += tokens
        text, stopped = self._cut(self.decode(self.ids))
        self.text = text
        end = len(text) if final or stopped else self._safe_end(text)
        new = text[self.sent : end] if end > self.sent else ""
        self.sent = max(self.sent, end)
        return new

    def _cut(self, text: str) -> tuple[str, bool]:
        hits = [i for i in (text.find(s) for s in self.stops) if i >= 0]
        return (text[: min(hits)], True) if hits else (text, False)

    def _safe_end(self, text: str) -> int:
        """Characters that can be sent: not a trailing partial character, not a possible stop start."""
        end = len(text)
        while end and text[end - 1] == "\ufffd":  # the decoder's mark for incomplete bytes
            end -= 1
        hold = 0  # the longest tail that begins some stop string
        for stop in self.stops:
            for k in range(min(len(stop) - 1, end), hold, -1):
                if text[end - k : end] == stop[:k]:
                    hold = k
                    break
        return end - hold
