"""Package a trained draft or Tandem secondary so it loads by name: only its own tensors, in bf16, the rest
by reference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel

from specdec.models.packaged import MANIFEST, WEIGHTS
from specdec.models.tandem import CONFIG_FILE, PROJECTIONS_FILE, SECONDARY_DIR, TandemModel


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


def export_tandem(trained: Path, folder: Path, base: str, base_model: PreTrainedModel, info: dict) -> None:
    """Write the Tandem checkpoint ``trained`` as a packaged secondary: its secondary as a packaged draft,
    projections in bf16, ``tandem.json`` and the router (if ``trained/router`` holds one)."""
    tandem = TandemModel.from_pretrained(trained)
    export_draft(tandem.secondary, folder / SECONDARY_DIR, base, base_model, info)
    projections = {
        k: v.to(torch.bfloat16).contiguous() for k, v in load_file(trained / PROJECTIONS_FILE).items()
    }
    save_file(projections, folder / PROJECTIONS_FILE)
    shutil.copyfile(trained / CONFIG_FILE, folder / CONFIG_FILE)
    if (trained / "router").is_dir():
        shutil.copytree(trained / "router", folder / "router", dirs_exist_ok=True)
