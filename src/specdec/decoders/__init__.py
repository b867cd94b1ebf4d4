"""Decoding algorithms, one short function each, over the engine and the drafters."""

from specdec.decoders.autoregressive import autoregressive_generate
from specdec.decoders.bild import BildConfig, bild_generate
from specdec.decoders.common import DecodeResult
from specdec.decoders.gamma import AdaptiveGamma, FixedGamma, GammaPolicy, HeuristicGamma, make_gamma_policy
from specdec.decoders.speculative import draft_verify_loop, speculative_generate, verify
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import StopCriteria, StreamCallback

__all__ = [
    "AdaptiveGamma",
    "BildConfig",
    "DecodeResult",
    "FixedGamma",
    "GammaPolicy",
    "GenerationStats",
    "HeuristicGamma",
    "StopCriteria",
    "StreamCallback",
    "autoregressive_generate",
    "bild_generate",
    "draft_verify_loop",
    "make_gamma_policy",
    "speculative_generate",
    "verify",
]
