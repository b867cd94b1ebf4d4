"""Sampling primitives: logits processing, keyed randomness, verification rules."""

from specdec.sampling.config import RowSampling, Sampling, SamplingConfig
from specdec.sampling.noise import Draws, GeneratorDraws, KeyedDraws, Stream, row_keys
from specdec.sampling.processors import (
    Entries,
    greedy_tokens,
    gumbel_argmax,
    logits_to_probs,
    max_probability,
    sampling_distribution,
    top_tokens,
)
from specdec.sampling.rejection import acceptance_probability, rejection_sample, residual_distribution
from specdec.sampling.tree import (
    TreeVerification,
    chain_parents,
    tree_attention,
    tree_match_verify,
    tree_rejection_sample,
)
from specdec.sampling.verification import Verification, greedy_verify, match_verify

__all__ = [
    "Draws",
    "Entries",
    "GeneratorDraws",
    "KeyedDraws",
    "RowSampling",
    "Sampling",
    "SamplingConfig",
    "Stream",
    "TreeVerification",
    "Verification",
    "acceptance_probability",
    "chain_parents",
    "greedy_tokens",
    "greedy_verify",
    "gumbel_argmax",
    "logits_to_probs",
    "match_verify",
    "max_probability",
    "rejection_sample",
    "residual_distribution",
    "row_keys",
    "sampling_distribution",
    "top_tokens",
    "tree_attention",
    "tree_match_verify",
    "tree_rejection_sample",
]
