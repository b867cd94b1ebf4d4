"""Drafters: independent small models, reduced-precision and truncated self-drafts, n-gram lookup, and
lookup backed by a model or a BiTA adapter."""

from specdec.drafters.base import BlockExtra, Draft, Drafter, Feedback
from specdec.drafters.bita import BiTADrafter, TreeShape
from specdec.drafters.combined import LookupThenBiTADrafter, LookupThenModelDrafter
from specdec.drafters.derived import ReducedPrecisionDrafter, TruncatedDrafter
from specdec.drafters.early_exit import EarlyExitDrafter
from specdec.drafters.factory import DRAFTER_SPECS, make_drafter
from specdec.drafters.model import ModelDrafter
from specdec.drafters.none import NoDrafter
from specdec.drafters.prompt_lookup import PromptLookupDrafter, lookup_continuation
from specdec.drafters.tandem import TandemDrafter

__all__ = [
    "DRAFTER_SPECS",
    "BiTADrafter",
    "BlockExtra",
    "Draft",
    "Drafter",
    "EarlyExitDrafter",
    "Feedback",
    "LookupThenBiTADrafter",
    "LookupThenModelDrafter",
    "ModelDrafter",
    "NoDrafter",
    "PromptLookupDrafter",
    "ReducedPrecisionDrafter",
    "TandemDrafter",
    "TreeShape",
    "TruncatedDrafter",
    "lookup_continuation",
    "make_drafter",
]
