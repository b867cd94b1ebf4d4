"""Converted models cached on disk: written completely or not at all, reused while their source is unchanged.

GGUF files and packaged drafts are turned once into plain HF folders (safetensors) under the cache
dir; a fingerprint of the source (size, version, digest) says whether a cached folder is still valid.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase

SOURCE_FILE = "specdec_source.json"
Converter = Callable[[], tuple[PreTrainedModel, PreTrainedTokenizerBase]]  # loads a source for caching


def default_cache_dir() -> Path:
    env = os.environ.get("SPECDEC_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "specdec"


def convert_to_cache(target: str | os.PathLike, fingerprint: dict[str, Any], convert: Converter) -> Path:
    """Return ``target`` holding a saved HF folder, calling ``convert`` only if its fingerprint is stale.

    Written to a temporary sibling and renamed into place when complete, so a crash, a Ctrl-C or a
    source that fails to convert never leaves a half cache that a later run would trust.
    """
    target = Path(target)
    wanted = json.loads(json.dumps(fingerprint, sort_keys=True))
    if _cache_matches(target, wanted):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from other users
    try:
        model, tokenizer = convert()
        # GGUF-loaded models are flagged as quantized and refuse save_pretrained although their
        # weights are already dequantized; dropping the flag saves them as plain tensors.
        model.hf_quantizer = None
        if "quantization_config" in model.config.__dict__:
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / SOURCE_FILE).write_text(json.dumps(wanted, sort_keys=True, indent=1))
        if target.exists():  # stale cache: os.replace cannot overwrite a non-empty directory
            os.replace(target, old := Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent)))
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not _cache_matches(target, wanted):  # not a concurrent process finishing first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _cache_matches(target: Path, wanted: dict[str, Any]) -> bool:
    try:
        return (target / "config.json").is_file() and json.loads((target / SOURCE_FILE).read_text()) == wanted
    except (OSError, ValueError):
        return False
