"""Package a trained draft so it loads by name: only its own tensors, in bf16, the rest by reference."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import PreTrainedModel

from specdec.models.packaged import MANIFEST, WEIGHTS


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
