"""The method interface: a decoding algorithm as a small object that builds its step-wise loop."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from specdec.decoders.common import DecodeResult, Request
from specdec.decoders.loop import DraftVerifyLoop
from specdec.drafters import Drafter
from specdec.engine import Engine


class DecodingMethod(ABC):
    """A decoding method as a small object: which algorithm, with which settings.

    ``Pipeline.generate(method=...)`` takes one; every method, plain decoding included, is a thin
    wrapper around :class:`specdec.decoders.loop.DraftVerifyLoop` with its own verify rule.
    """

    name: ClassVar[str]
    #: whether the method drafts (and so needs the pipeline's drafter)
    needs_drafter: ClassVar[bool] = True
    #: whether its greedy output equals plain greedy decoding and its sampled output follows the
    #: target's distribution exactly (the conformance tests hold every lossless method to this)
    lossless: ClassVar[bool] = True

    @abstractmethod
    def loop(self, target: Engine, drafter: Drafter | None, request: Request) -> DraftVerifyLoop:
        """The step-wise loop for ``request`` on the target's engine (with ``drafter`` when
        :attr:`needs_drafter`): requests join and leave it between steps."""

    def decode(self, target: Engine, drafter: Drafter | None, request: Request) -> DecodeResult:
        """Decode ``request`` to the end: its loop stepped until every row has finished."""
        loop = self.loop(target, drafter, request)
        while loop.active:
            loop.step()
        return loop.result()
