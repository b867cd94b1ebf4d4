"""Trained drafts shipped inside the package, small because they reuse their target's embeddings.

A packaged draft folder holds the draft's config, its own weights in bf16 (``draft.safetensors``,
without the tensors it shares with its base model) and ``specdec_draft.json`` naming the base and
the shared tensors. Loading rebuilds a plain HF folder in the cache (base tensors + draft tensors,
fp32) once, so later loads, and any other engine, see an ordinary ``from_pretrained`` folder.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

DRAFTS_DIR = Path(__file__).parent / "drafts"
MANIFEST = "specdec_draft.json"
WEIGHTS = "draft.safetensors"


def packaged_drafts() -> dict[str, Path]:
    if not DRAFTS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(DRAFTS_DIR.iterdir()) if (p / MANIFEST).is_file()}


def export_draft(
    model: PreTrainedModel, folder: Path, base: str, base_model: PreTrainedModel, info: dict
) -> None:
    """Write ``model`` as a packaged draft: tensors equal to ``base_model``'s are stored by reference."""
    folder.mkdir(parents=True, exist_ok=True)
    base_state = base_model.state_dict()
    own, shared = {}, []
    for key, value in model.state_dict().items():
        if key in base_state and base_state[key].shape == value.shape and torch.equal(base_state[key], value):
            shared.append(key)
        else:
            own[key] = value.detach().to(torch.bfloat16).contiguous()
    model.config.save_pretrained(folder)
    save_file(own, folder / WEIGHTS)
    (folder / MANIFEST).write_text(json.dumps({"base": base, "shared": sorted(shared), **info}, indent=1))


def packaged_folder(name: str, folder: Path, cache_dir: Path) -> Path:
    from specdec.models.loading import convert_to_cache, load_model

    manifest = json.loads((folder / MANIFEST).read_text())
    digest = hashlib.sha256((folder / WEIGHTS).read_bytes()).hexdigest()[:16]

    def convert():
        base = load_model(manifest["base"], cache_dir=cache_dir)
        draft = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=torch.float32)
        state = {k: v.float() for k, v in load_file(folder / WEIGHTS).items()}
        base_state = base.model.state_dict()
        state.update({k: base_state[k] for k in manifest["shared"]})
        draft.load_state_dict(state, strict=False)
        draft.tie_weights()
        return draft, base.tokenizer

    return convert_to_cache(cache_dir / name, {"weights": digest, "base": manifest["base"]}, convert)
