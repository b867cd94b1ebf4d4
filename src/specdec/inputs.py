"""Checks of what users pass to ``Pipeline.generate``: one clear specdec error per mistake, raised
before any work is done, instead of a traceback from inside torch, jinja or the tokenizer."""

from __future__ import annotations

import argparse
import numbers
from collections.abc import Sequence
from typing import Any

import torch

from specdec.errors import InvalidArgumentError, PromptError
from specdec.sampling.noise import fresh_seeds

MAX_SEED = 2**64


def _is_token_id(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_messages(value: Any) -> bool:
    return isinstance(value, list | tuple) and len(value) > 0 and isinstance(value[0], dict)


def as_batch(prompts: Any) -> list:
    """The prompts of a call: one prompt (text, token ids as a list or 1-D tensor, a chat) or a list
    of them (or a 2-D tensor of token ids, one row per prompt)."""
    if isinstance(prompts, str) or _is_messages(prompts):
        return [prompts]
    if isinstance(prompts, torch.Tensor):
        if prompts.dim() == 1:
            return [prompts]
        if prompts.dim() == 2:
            return list(prompts)
        raise PromptError(
            f"a tensor of token ids must be 1-D (one prompt) or 2-D (one prompt per row), got shape "
            f"{tuple(prompts.shape)}"
        )
    if isinstance(prompts, list | tuple):
        if not prompts:
            raise PromptError("no prompts given")
        if all(isinstance(x, numbers.Number) for x in prompts):
            return [prompts]  # one prompt of token ids (checked to be integers when encoded)
        return list(prompts)
    raise PromptError(
        "prompts must be text, token ids, a chat (list of {'role', 'content'} messages) or a list of "
        f"those, got {type(prompts).__name__}"
    )


def token_ids(prompt: Sequence | torch.Tensor, vocab_size: int) -> list[int]:
    """Integer ids in [0, vocab_size), from a list/tuple or a 1-D integer tensor."""
    if isinstance(prompt, torch.Tensor):
        if prompt.is_floating_point() or prompt.is_complex() or prompt.dtype == torch.bool:
            raise PromptError(f"token ids must be integers, got a {prompt.dtype} tensor")
        prompt = prompt.tolist()
    ids = list(prompt)
    if not ids:
        raise PromptError("prompt is empty")
    wrong = next((t for t in ids if not _is_token_id(t)), None)
    if wrong is not None:
        raise PromptError(f"token ids must be integers, got {wrong!r} ({type(wrong).__name__})")
    ids = [int(t) for t in ids]
    if min(ids) < 0 or max(ids) >= vocab_size:
        raise PromptError(f"prompt token ids must be in [0, {vocab_size}), got {min(ids)}..{max(ids)}")
    return ids


def check_messages(messages: Sequence) -> list[dict]:
    """A chat: dicts with a string ``role`` and a string (or list, for multimodal templates) ``content``."""
    for i, message in enumerate(messages):
        ok = (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str | list)
        )
        if not ok:
            shown = repr(message)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise PromptError(
                f"chat message {i} must be a dict with a 'role' and a 'content' string, got {shown}"
            )
    return list(messages)


def positive_int(text: str) -> int:
    """argparse's type for a count (tokens, prompts, articles, steps, rows, sizes): an integer >= 1, so that
    a 0 or a negative number is a usage error before any model loads, not a division by zero deep in a run
    or a run that loads everything and then does nothing."""
    return _integer_argument(text, 1)


def non_negative_int(text: str) -> int:
    """argparse's type for an integer where 0 means something (no warm-up, top-k off, nothing skipped)."""
    return _integer_argument(text, 0)


def _integer_argument(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f"must be an integer >= {least}, got {text!r}")
    return value


def check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def check_stop(stop: Any) -> tuple[str, ...]:
    """Stop strings: one string, or a list of them; each non-empty (an empty one would match at once)."""
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = (stop,)
    if not isinstance(stop, list | tuple):
        raise InvalidArgumentError(f"stop must be a string or a list of strings, got {type(stop).__name__}")
    for s in stop:
        if not isinstance(s, str) or not s:
            raise InvalidArgumentError(f"each stop string must be a non-empty str, got {s!r}")
    return tuple(stop)


def _is_seed(value: Any) -> bool:
    return _is_token_id(value) and 0 <= value < MAX_SEED


def check_seeds(seed: Any, num_prompts: int) -> list[int]:
    """One seed per prompt: ``None`` (fresh random seeds), one int for all, or a list of one per prompt."""
    if seed is None:
        return fresh_seeds(num_prompts)
    if _is_seed(seed):
        return [int(seed)] * num_prompts
    if isinstance(seed, list | tuple) and len(seed) == num_prompts and all(_is_seed(s) for s in seed):
        return [int(s) for s in seed]
    raise InvalidArgumentError(
        f"seed must be an integer in [0, 2**64), or a list of {num_prompts} such integers (one per prompt), "
        f"got {seed!r}"
    )


def check_flag(name: str, value: Any, allow_none: bool = True) -> None:
    if not (isinstance(value, bool) or (allow_none and value is None)):
        raise InvalidArgumentError(
            f"{name} must be True, False{' or None' if allow_none else ''}, got {value!r}"
        )
