"""Trained drafts shipped inside the package, small because they reuse their target's embeddings.

A packaged BiTA adapter (``bita.json``) is its own small file and loads from where it lies.

A packaged Tandem secondary (``tandem.json`` at its top) holds its secondary as such a draft in
``secondary/``, beside its projections (bf16) and, if trained, its router; loading rebuilds the
secondary the same way and copies the rest next to it, giving a folder ``TandemModel`` reads.

A packaged draft folder holds the draft's config, its own weights in bf16 (``draft.safetensors``,
without the tensors it shares with its base model) and ``specdec_draft.json`` naming the base and
the shared tensors. Loading rebuilds a plain HF folder in the cache (base tensors + draft tensors,
fp32) once, so later loads, and any other engine, see an ordinary ``from_pretrained`` folder.
Writing one is :func:`specdec.training.export.export_draft`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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
#: The fastest drafter of the current results page (benchmarks/RESULTS.md) for each target a drafter is
#: packaged for: what ``generate`` and ``demo`` speculate with when no ``--drafter`` is given, and what
#: ``bench spec`` compares by default. Other targets get prompt lookup, which needs nothing trained.
BEST_DRAFTERS = {"smollm2-135m": "lookup+int8:tree-2:eagle3:smollm2-135m-eagle3"}


def default_drafter(model: str) -> str:
    """What ``model`` speculates with when no drafter is named: its best measured one, else prompt lookup."""
    return BEST_DRAFTERS.get(model, "prompt-lookup")


def drafter_digest(spec: str) -> str | None:
    """sha256 (first 16 hex) of the weight files behind a drafter spec — a packaged name or a folder,
    under any ``int8:`` / ``vocab-N:`` / ``tandem:`` / ``bita:`` / ``lookup+`` prefixes — so a result
    names the exact weights it ran; None for drafters without weights of their own."""
    name = spec.split("+")[-1].split(":")[-1]
    folder = Path(name) if Path(name).is_dir() else DRAFTS_DIR / name
    files = sorted(folder.rglob("*.safetensors")) if folder.is_dir() else []
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def packaged_drafts() -> dict[str, Path]:
    if not DRAFTS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(DRAFTS_DIR.iterdir()) if (p / MANIFEST).is_file()}


def packaged_tandems() -> dict[str, Path]:
    from specdec.models.tandem import CONFIG_FILE  # models.tandem needs the engine, which loads models

    if not DRAFTS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(DRAFTS_DIR.iterdir()) if (p / CONFIG_FILE).is_file()}


def packaged_bitas() -> dict[str, Path]:
    """Shipped BiTA adapters: standalone files (prompt and mask tokens), loaded from where they lie."""
    from specdec.models.bita import CONFIG_FILE

    if not DRAFTS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(DRAFTS_DIR.iterdir()) if (p / CONFIG_FILE).is_file()}


def packaged_eagle3s() -> dict[str, Path]:
    """Shipped EAGLE-3 heads: folders in the speculators layout, loaded from where they lie."""
    from specdec.models.eagle3_layout import CONFIG_FILE

    if not DRAFTS_DIR.is_dir():
        return {}
    return {
        p.name: p
        for p in sorted(DRAFTS_DIR.iterdir())
        if (p / CONFIG_FILE).is_file()
        and json.loads((p / CONFIG_FILE).read_text()).get("speculators_model_type") == "eagle3"
    }


def exported_folder_name(folder: Path) -> str:
    """The cache name of an exported draft or Tandem folder given by path: its name and a digest of every
    file in it, so a changed or re-exported folder (a router added, say) never reads another's rebuilt copy,
    nor the packaged draft of the same name."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "README.md"):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return f"{folder.name}-{digest.hexdigest()[:16]}"


def packaged_tandem_folder(name: str, folder: Path, cache_dir: Path, load_base: BaseLoader) -> Path:
    """The cached Tandem folder of packaged secondary ``name`` (see the module docstring)."""
    from specdec.models.tandem import SECONDARY_DIR

    target = cache_dir / name
    packaged_folder(SECONDARY_DIR, folder / SECONDARY_DIR, target, load_base)
    for item in folder.iterdir():
        if item.is_file() and item.name != "README.md":
            _copy_if_changed(item, target / item.name)
        elif item.is_dir() and item.name != SECONDARY_DIR:  # the router
            for file in item.iterdir():
                _copy_if_changed(file, target / item.name / file.name)
    return target


def _copy_if_changed(source: Path, destination: Path) -> None:
    if not destination.is_file() or destination.read_bytes() != source.read_bytes():
        destination.parent.mkdir(parents=True, exist_ok=True)
        tmp = destination.with_name(f".{destination.name}.tmp")
        shutil.copyfile(source, tmp)
        os.replace(tmp, destination)


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
