"""Loading target and draft models (built-in names, HF folders, GGUF files, hub ids)."""

from specdec.models.loading import (
    BUILTIN_MODELS,
    BuiltinModel,
    Converter,
    LoadedModel,
    convert_to_cache,
    default_cache_dir,
    load_model,
    resolve_dtype,
)

__all__ = [
    "BUILTIN_MODELS",
    "BuiltinModel",
    "Converter",
    "LoadedModel",
    "convert_to_cache",
    "default_cache_dir",
    "load_model",
    "resolve_dtype",
]
