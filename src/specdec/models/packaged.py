"""Trained drafts shipped inside the package, small because they reuse their target's embeddings.

A packaged draft folder holds the draft's config, its own weights in bf16 (``draft.safetensors``,
without the tensors it shares with its base model) and ``specdec_draft.json`` naming the base and
the shared tensors. Loading rebuilds a plain HF folder in the cache (base tensors + draft tensors,
fp32) once, so later loads, and any other engine, see an ordinary ``from_pretrained`` folder.
Writing one is :func:`specdec.training.export.export_draft`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from specdec.models.conversion import convert_to_cache

DRAFTS_DIR = Path(__file__).parent / "drafts"
MANIFEST = "specdec_draft.json"
WEIGHTS = "draft.safetensors"
BaseLoader = Callable[[str], tuple[PreTrainedModel, PreTrainedTokenizerBase]]


def packaged_drafts() -> dict[str, Path]:
    if not DRAFTS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(DRAFTS_DIR.iterdir()) if (p / MANIFEST).is_file()}


def packaged_folder(name: str, folder: Path, cache_dir: Path, load_base: BaseLoader) -> Path:
    """The cached HF folder of packaged draft ``name``; ``load_base(name)`` loads the model it shares with."""
    manifest = json.loads((folder / MANIFEST).read_text())
    digest = hashlib.sha256((folder / WEIGHTS).read_bytes()).hexdigest()[:16]

    def convert():
        base_model, base_tokenizer = load_base(manifest["base"])
        draft = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=torch.float32)
        state = {k: v.float() for k, v in load_file(folder / WEIGHTS).items()}
        base_state = base_model.state_dict()
        state.update({k: base_state[k] for k in manifest["shared"]})
        draft.load_state_dict(state, strict=False)
        draft.tie_weights()
        return draft, base_tokenizer

    return convert_to_cache(cache_dir / name, {"weights": digest, "base": manifest["base"]}, convert)
