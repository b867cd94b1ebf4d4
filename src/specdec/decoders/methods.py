"""Decoding methods by name, for the pipeline's ``method=`` argument and the command line."""

from __future__ import annotations

from specdec.decoders.autoregressive import PlainDecoding
from specdec.decoders.bild import BiLD
from specdec.decoders.method import DecodingMethod
from specdec.decoders.speculative import SpeculativeSampling
from specdec.decoders.tandem import TandemGeneration
from specdec.errors import InvalidArgumentError

METHODS: dict[str, type[DecodingMethod]] = {
    m.name: m for m in (PlainDecoding, SpeculativeSampling, BiLD, TandemGeneration)
}


def make_method(method: str | DecodingMethod | None, have_drafter: bool) -> DecodingMethod:
    """A method object from a name (default settings) or as given; None: SpS with a drafter, else plain."""
    if method is None:
        return SpeculativeSampling() if have_drafter else PlainDecoding()
    if isinstance(method, DecodingMethod):
        return method
    if isinstance(method, str) and method in METHODS:
        return METHODS[method]()
    raise InvalidArgumentError(
        f"method must be one of {sorted(METHODS)} or a DecodingMethod (e.g. SpeculativeSampling(gamma=4), "
        f"BiLD(0.5, 3.0)), got {method!r}"
    )
