"""Loading target and draft models (built-in names, HF folders, GGUF files, hub ids) and deriving
drafts from them (truncated and reduced-precision copies, vocabulary checks)."""

from specdec.models.conversion import convert_to_cache, default_cache_dir
from specdec.models.loading import (
    BUILTIN_MODELS,
    BuiltinModel,
    LoadedModel,
    load_model,
    resolve_device,
    resolve_dtype,
)
from specdec.models.surgery import (
    PRECISIONS,
    check_truncation,
    decoder_layers,
    reduced_precision_copy,
    shallow_copy,
    truncated_copy,
)
from specdec.models.vocabulary import check_same_vocabulary, output_vocab_size

__all__ = [
    "BUILTIN_MODELS",
    "PRECISIONS",
    "BuiltinModel",
    "LoadedModel",
    "check_same_vocabulary",
    "check_truncation",
    "convert_to_cache",
    "decoder_layers",
    "default_cache_dir",
    "load_model",
    "output_vocab_size",
    "reduced_precision_copy",
    "resolve_device",
    "resolve_dtype",
    "shallow_copy",
    "truncated_copy",
]
