"""Drafters: independent small models, reduced-precision and truncated self-drafts, n-gram lookup."""

from specdec.drafters.base import Draft, Drafter
from specdec.drafters.derived import (
    PRECISIONS,
    ReducedPrecisionDrafter,
    TruncatedDrafter,
    check_truncation,
    reduced_precision_copy,
    truncated_copy,
)
from specdec.drafters.early_exit import EarlyExitDrafter
from specdec.drafters.factory import DRAFTER_SPECS, make_drafter
from specdec.drafters.model import ModelDrafter, check_same_vocabulary
from specdec.drafters.prompt_lookup import PromptLookupDrafter, lookup_continuation

__all__ = [
    "DRAFTER_SPECS",
    "PRECISIONS",
    "Draft",
    "Drafter",
    "EarlyExitDrafter",
    "ModelDrafter",
    "PromptLookupDrafter",
    "ReducedPrecisionDrafter",
    "TruncatedDrafter",
    "check_same_vocabulary",
    "check_truncation",
    "lookup_continuation",
    "make_drafter",
    "reduced_precision_copy",
    "truncated_copy",
]
