"""BiTA's adapter (§3.1): prompt and mask tokens that make a frozen causal LM draft its own future tokens.

Prompt tokens condition the mask tokens only (Fig. 3), so every ordinary token computes exactly what
the bare model computes. Three designs, the ablation of Table 3:

- ``"deep"`` (the paper's, P-tuning v2 as in the official code): one learned vector of size
  layers · 2 · (key/value width) per prompt token, reshaped into every layer's keys and values;
- ``"shallow"``: learned input embeddings, whose keys and values the frozen model computes;
- ``"none"``: mask tokens only.

Mask tokens are learned input embeddings, one per distance: placed after a token at position s, mask
i (1-based) takes position s + i and predicts the token at s + i + 1, beyond the token the model's
own output at s predicts. At inference the keys and values of the prompt tokens live in the target
engine's reserved slots, which only mask tokens see.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import DynamicCache, PreTrainedModel

from specdec.engine.modeling import with_cache
from specdec.errors import InvalidArgumentError, ModelNotFoundError, VocabularyMismatchError
from specdec.models.vocabulary import output_vocab_size

CONFIG_FILE = "bita.json"
WEIGHTS_FILE = "bita.safetensors"
PROMPT_KINDS = ("deep", "shallow", "none")
MAX_PROMPTS, MAX_MASKS = 256, 16


def model_signature(model: PreTrainedModel) -> dict:
    """What an adapter must agree with: the shapes its prompt states and mask embeddings take."""
    config = model.config.get_text_config()
    heads = config.num_attention_heads
    return {
        "model_type": config.model_type,
        "num_hidden_layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "num_key_value_heads": getattr(config, "num_key_value_heads", None) or heads,
        "head_dim": getattr(config, "head_dim", None) or config.hidden_size // heads,
        "vocab_size": output_vocab_size(model),
    }


def _int_in(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class BiTAAdapter(nn.Module):
    """P prompt tokens and M mask tokens for the model ``signature`` describes.

    Args:
        signature: :func:`model_signature` of the model it adapts.
        num_prompts: P (the paper: 16); must be 0 for ``kind="none"``.
        num_masks: M, the future tokens drafted per mask group (the paper: 3 for models ≤ 13B).
        kind: ``"deep"``, ``"shallow"`` or ``"none"`` (see the module doc).
        prefix_dropout: dropout on the prompt vectors while training (the official 0.1).
        model_name: the model it was trained for, checked (with the signature) on load.
    """

    def __init__(
        self,
        signature: dict,
        num_prompts: int = 16,
        num_masks: int = 3,
        kind: str = "deep",
        prefix_dropout: float = 0.1,
        model_name: str | None = None,
    ):
        super().__init__()
        if kind not in PROMPT_KINDS:
            raise InvalidArgumentError(f"prompt kind must be one of {PROMPT_KINDS}, got {kind!r}")
        low, high = (0, 0) if kind == "none" else (1, MAX_PROMPTS)
        if not _int_in(num_prompts, low, high):
            raise InvalidArgumentError(
                f"{kind} prompts: P must be an integer in [{low}, {high}], got {num_prompts!r}"
            )
        if not _int_in(num_masks, 1, MAX_MASKS):
            raise InvalidArgumentError(
                f"M (mask tokens) must be an integer in [1, {MAX_MASKS}], got {num_masks!r}"
            )
        self.signature, self.kind, self.model_name = dict(signature), kind, model_name
        self.num_prompts, self.num_masks = num_prompts, num_masks
        hidden = signature["hidden_size"]
        kv_width = signature["num_key_value_heads"] * signature["head_dim"]
        width = {"deep": signature["num_hidden_layers"] * 2 * kv_width, "shallow": hidden, "none": 0}[kind]
        self.prompts = nn.Parameter(torch.randn(num_prompts, width) * 0.02)
        self.masks = nn.Parameter(torch.randn(num_masks, hidden) * 0.02)
        self.dropout = nn.Dropout(prefix_dropout)

    def check_model(self, model: PreTrainedModel, name: str | None = None) -> None:
        """Raise if ``model`` is not the model this adapter was trained for."""
        theirs = model_signature(model)
        if theirs != self.signature:
            raise VocabularyMismatchError(
                f"this BiTA adapter belongs to a model with {self.signature}, not {theirs}"
            )
        if name is not None and self.model_name is not None and name != self.model_name:
            raise VocabularyMismatchError(f"this BiTA adapter belongs to {self.model_name!r}, not {name!r}")

    def prefix(self, model: PreTrainedModel) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Every layer's prompt keys and values ``[1, kv_heads, P, head_dim]`` (empty for ``"none"``)."""
        if self.kind == "none":
            return []
        sig = self.signature
        if self.kind == "deep":
            states = self.dropout(self.prompts).view(
                self.num_prompts, sig["num_hidden_layers"], 2, sig["num_key_value_heads"], sig["head_dim"]
            )
            states = states.permute(1, 2, 3, 0, 4)  # [layers, 2, heads, P, head_dim]
            return [(layer[0][None], layer[1][None]) for layer in states]
        cache = DynamicCache()
        embeds = self.dropout(self.prompts)[None].to(model.dtype)
        model.base_model(inputs_embeds=embeds, use_cache=True, **with_cache(model.base_model, cache))
        return [(layer.keys, layer.values) for layer in cache.layers]

    def mask_embeddings(self, groups: int, dtype: torch.dtype, count: int | None = None) -> torch.Tensor:
        """``[groups · count, d]``: the first ``count`` (default M) mask tokens per group, in order."""
        return self.masks[: self.num_masks if count is None else count].to(dtype).repeat(groups, 1)

    # -- files ---------------------------------------------------------------------------------------
    def save_pretrained(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {"prompts": self.prompts.detach().contiguous(), "masks": self.masks.detach().contiguous()}
        save_file(tensors, folder / WEIGHTS_FILE)
        config = {
            "kind": self.kind,
            "num_prompts": self.num_prompts,
            "num_masks": self.num_masks,
            "model_name": self.model_name,
            "model": self.signature,
        }
        (folder / CONFIG_FILE).write_text(json.dumps(config, indent=1))

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> BiTAAdapter:
        folder = Path(folder)
        if not (folder / CONFIG_FILE).is_file() or not (folder / WEIGHTS_FILE).is_file():
            raise ModelNotFoundError(f"{folder} is not a BiTA adapter (no {CONFIG_FILE} and {WEIGHTS_FILE})")
        config = json.loads((folder / CONFIG_FILE).read_text())
        adapter = cls(
            config["model"],
            config["num_prompts"],
            config["num_masks"],
            config["kind"],
            model_name=config.get("model_name"),
        )
        tensors = load_file(folder / WEIGHTS_FILE)
        with torch.no_grad():
            adapter.prompts.copy_(tensors["prompts"])
            adapter.masks.copy_(tensors["masks"])
        return adapter.eval()
