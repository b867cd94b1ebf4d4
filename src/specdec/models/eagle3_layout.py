"""EAGLE-3 heads on disk in the ``speculators`` layout, the one vLLM and SGLang serve.

A folder holds ``config.json`` and ``model.safetensors``. The config names the head
(``speculators_model_type: "eagle3"``, ``architectures: ["Eagle3Speculator"]``), its one-layer Llama
decoder (``transformer_layer_config``, with the *target's* vocabulary size), the draft vocabulary
size, the target's hidden size, the target layers it reads (``eagle_aux_hidden_state_layer_ids``),
``norm_before_residual`` — always written: the speculators package defaults it to false, vLLM to true
— and how it drafts (``speculators_config``: algorithm, a greedy proposal of k tokens, the verifier).
specdec trains and saves its heads this way, so what it trains is what those servers load, and a
head trained elsewhere in this layout drafts here.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig

from specdec.errors import InvalidArgumentError, ModelNotFoundError
from specdec.models.eagle3 import Eagle3Head, default_aux_layers

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
LAYER_KEYS = (  # what the decoder layer's config must say; the rest of a Llama config has defaults
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "rms_norm_eps",
    "vocab_size",
)


def head_config(head: Eagle3Head, verifier: dict, speculative_tokens: int) -> dict:
    """The head's ``config.json``; ``verifier``: ``{"name_or_path": ..., "architectures": [...]}``."""
    layer = head.config.to_dict()
    layer.update(num_hidden_layers=1, architectures=["LlamaForCausalLM"], model_type="llama")
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "transformer_layer_config": layer,
        "draft_vocab_size": len(head.d2t),
        "target_hidden_size": head.target_hidden_size,
        "norm_before_residual": head.norm_before_residual,
        "eagle_aux_hidden_state_layer_ids": list(head.aux_layers),
        "speculators_config": {
            "algorithm": "eagle3",
            "proposal_methods": [
                {
                    "proposal_type": "greedy",
                    "speculative_tokens": speculative_tokens,
                    "verifier_accept_k": 1,
                    "accept_tolerance": 0.0,
                }
            ],
            "default_proposal_method": "greedy",
            "verifier": {
                "name_or_path": verifier["name_or_path"],
                "architectures": list(verifier["architectures"]),
            },
        },
        "torch_dtype": str(head.fc.weight.dtype).removeprefix("torch."),
    }


def save_head(head: Eagle3Head, folder: Path, verifier: dict, speculative_tokens: int = 3) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CONFIG_FILE).write_text(json.dumps(head_config(head, verifier, speculative_tokens), indent=1))
    tensors = {name: t.detach().contiguous() for name, t in head.state_dict().items()}
    save_file(tensors, str(folder / WEIGHTS_FILE))
    return folder


def read_config(folder: Path) -> dict:
    """A speculators EAGLE-3 ``config.json``, with a clear error for anything else."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise ModelNotFoundError(f"no EAGLE-3 head in {folder}: {CONFIG_FILE} not found")
    config = json.loads(path.read_text())
    if config.get("speculators_model_type") != "eagle3":
        raise InvalidArgumentError(
            f"{path} is not an EAGLE-3 head in the speculators layout "
            f"(speculators_model_type is {config.get('speculators_model_type')!r}, not 'eagle3')"
        )
    layer = config.get("transformer_layer_config")
    missing = [k for k in LAYER_KEYS if not isinstance(layer, dict) or k not in layer]
    missing += [k for k in ("draft_vocab_size",) if k not in config]
    if missing:
        raise InvalidArgumentError(f"{path} lacks {missing}")
    return config


def load_head(folder: Path, target_layers: int | None = None) -> Eagle3Head:
    """The head saved in ``folder``. ``target_layers`` (the target's depth) gives vLLM's default layers when
    the config names none; an absent ``norm_before_residual`` is false, as the speculators package reads
    it."""
    config = read_config(folder)
    layer = LlamaConfig(**{**config["transformer_layer_config"], "num_hidden_layers": 1})
    aux = config.get("eagle_aux_hidden_state_layer_ids")
    if not aux:
        if target_layers is None:
            raise InvalidArgumentError(f"{folder}: the head names no target layers; give the target's depth")
        aux = default_aux_layers(target_layers)
    weights = Path(folder) / WEIGHTS_FILE
    if not weights.is_file():
        raise ModelNotFoundError(f"no EAGLE-3 weights in {folder}: {WEIGHTS_FILE} not found")
    tensors = load_file(str(weights))
    size = int(config["draft_vocab_size"])
    draft_ids = None
    if "d2t" in tensors:
        draft_ids = tensors["d2t"].long() + torch.arange(len(tensors["d2t"]))
    elif size != layer.vocab_size:
        raise InvalidArgumentError(f"{folder}: a draft vocabulary of {size} tokens needs d2t to map it")
    head = Eagle3Head(
        layer,
        aux,
        int(config.get("target_hidden_size") or layer.hidden_size),
        draft_ids,
        bool(config.get("norm_before_residual", False)),
    )
    tensors = {k: v for k, v in tensors.items() if not k.startswith("embed_tokens")}  # the target's own
    problems = head.load_state_dict(tensors, strict=False)
    missing = [k for k in problems.missing_keys if k != "t2d"]  # optional: d2t says the same
    if missing or problems.unexpected_keys:
        raise InvalidArgumentError(
            f"{folder}: tensors do not match the config (missing {missing}, "
            f"unexpected {problems.unexpected_keys})"
        )
    return head.eval()
