"""specdec: faster generation for Hugging Face causal LMs with speculative decoding."""

from specdec.decoders import BildConfig
from specdec.drafters import Drafter, make_drafter
from specdec.engine import Engine
from specdec.models import load_model
from specdec.pipeline import GenerationResult, Pipeline
from specdec.sampling import SamplingConfig

__all__ = [
    "BildConfig",
    "Drafter",
    "Engine",
    "GenerationResult",
    "Pipeline",
    "SamplingConfig",
    "load_model",
    "make_drafter",
]
