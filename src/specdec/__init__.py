"""specdec: faster generation for Hugging Face causal LMs with speculative decoding."""

from specdec.decoders import BiLD, DecodingMethod, PlainDecoding, SpeculativeSampling
from specdec.drafters import Drafter, make_drafter
from specdec.engine import Engine
from specdec.models import load_model
from specdec.pipeline import GenerationResult, Pipeline
from specdec.sampling import SamplingConfig

__all__ = [
    "BiLD",
    "DecodingMethod",
    "Drafter",
    "Engine",
    "GenerationResult",
    "Pipeline",
    "PlainDecoding",
    "SamplingConfig",
    "SpeculativeSampling",
    "load_model",
    "make_drafter",
]
