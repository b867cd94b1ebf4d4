"""Model execution: cache, kernels and the engine decoders run on."""

from specdec.engine.cache import SlotCache
from specdec.engine.engine import Engine
from specdec.engine.kernels import PackedLinear, pack_linear_layers, packing_supported
from specdec.engine.modeling import check_rollback_support, context_size
from specdec.engine.output import ExtendOutput

__all__ = [
    "Engine",
    "ExtendOutput",
    "PackedLinear",
    "SlotCache",
    "check_rollback_support",
    "context_size",
    "pack_linear_layers",
    "packing_supported",
]
