"""Exceptions raised for bad input.

Every user-facing check raises one of these, so callers can catch a specdec problem without
catching everything torch might raise. They subclass the builtin that fits (``ValueError``,
``FileNotFoundError``) so code that already catches those keeps working.
"""

from __future__ import annotations


class SpecDecError(Exception):
    """Base class of every error specdec raises on purpose."""


class InvalidArgumentError(SpecDecError, ValueError):
    """A parameter is out of its valid range (temperature < 0, top_p outside (0, 1], γ < 1, ...)."""


class PromptError(SpecDecError, ValueError):
    """A prompt is empty or does not fit in the model's context."""


class VocabularyMismatchError(SpecDecError, ValueError):
    """Target and draft do not share a tokenizer / vocabulary, so draft tokens cannot be verified."""


class UnsupportedCacheError(SpecDecError, ValueError):
    """The model or the requested cache cannot be rolled back token by token."""


class ModelNotFoundError(SpecDecError, FileNotFoundError):
    """A model name, directory or file could not be resolved."""


class ModelFormatError(SpecDecError, ValueError):
    """A model file exists but cannot be read (not a GGUF file, truncated, unsupported architecture)."""


class CacheMemoryError(SpecDecError, MemoryError):
    """The KV cache a request needs could not be allocated."""


class OfflineError(SpecDecError, OSError):
    """A hub id was requested but no model hub is reachable from this machine."""


class DataNotFoundError(SpecDecError, FileNotFoundError):
    """A corpus, prompt set or cached dataset file is missing."""


class EmptyDataError(SpecDecError, ValueError):
    """A corpus or prompt set holds no usable text."""
