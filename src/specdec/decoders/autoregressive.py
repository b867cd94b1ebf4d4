"""Plain autoregressive decoding: the baseline every lossless speculative decoder must reproduce.

It runs on the draft-then-verify loop with a drafter that never drafts (one target call, one token
per row per step), so plain decoding and speculation share one loop, admission and stepping included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from specdec.decoders.common import Request
from specdec.decoders.loop import DraftVerifyLoop
from specdec.decoders.method import DecodingMethod
from specdec.decoders.speculative import coupled_verify
from specdec.drafters import Drafter, NoDrafter
from specdec.engine import Engine


@dataclass(frozen=True)
class PlainDecoding(DecodingMethod):
    """One target call per token."""

    name: ClassVar[str] = "plain"
    needs_drafter: ClassVar[bool] = False

    def loop(self, target: Engine, drafter: Drafter | None, request: Request) -> DraftVerifyLoop:
        return DraftVerifyLoop(target, NoDrafter(), request, coupled_verify, policy=None)
