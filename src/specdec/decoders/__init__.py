"""Decoding algorithms, one short function each over the engine and the drafters, and the method
objects that name them with their settings."""

from specdec.decoders.autoregressive import PlainDecoding
from specdec.decoders.bild import BiLD, bild_verify, rollback_distance
from specdec.decoders.common import DecodeResult, Request
from specdec.decoders.gamma import AdaptiveGamma, FixedGamma, HeuristicGamma, make_gamma_policy
from specdec.decoders.loop import DraftVerifyLoop, StepOutput
from specdec.decoders.method import DecodingMethod
from specdec.decoders.methods import METHODS, make_method
from specdec.decoders.policy import GammaPolicy
from specdec.decoders.speculative import SpeculativeSampling, coupled_verify, rejection_verify
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import StopCriteria, StreamCallback
from specdec.decoders.tandem import TandemGeneration

__all__ = [
    "METHODS",
    "AdaptiveGamma",
    "BiLD",
    "DecodeResult",
    "DecodingMethod",
    "DraftVerifyLoop",
    "FixedGamma",
    "GammaPolicy",
    "GenerationStats",
    "HeuristicGamma",
    "PlainDecoding",
    "Request",
    "SpeculativeSampling",
    "StepOutput",
    "StopCriteria",
    "StreamCallback",
    "TandemGeneration",
    "bild_verify",
    "coupled_verify",
    "make_gamma_policy",
    "make_method",
    "rejection_verify",
    "rollback_distance",
]
