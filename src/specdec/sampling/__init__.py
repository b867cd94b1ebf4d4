"""Sampling primitives: logits processing and the modified rejection sampler."""

from specdec.sampling.processors import (
    SamplingConfig,
    greedy_tokens,
    logits_to_probs,
    max_probability,
    sample,
)
from specdec.sampling.rejection import (
    Verification,
    acceptance_probability,
    greedy_verify,
    rejection_sample,
    residual_distribution,
)

__all__ = [
    "SamplingConfig",
    "Verification",
    "acceptance_probability",
    "greedy_tokens",
    "greedy_verify",
    "logits_to_probs",
    "max_probability",
    "rejection_sample",
    "residual_distribution",
    "sample",
]
