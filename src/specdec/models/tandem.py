"""Tandem Transformers (eq. 2, Fig. 1): a small secondary decoder reading the large primary's representations.

The secondary is an ordinary causal LM of the primary's own architecture class (built like a draft:
fewer, optionally narrower layers), plus one learned linear projection FF_Tandem^(j) per secondary
layer j that maps the primary's hidden state at index ℓ(j) (``layer_map[j]``; 0 = embeddings, k =
output of primary layer k) to the secondary's width. For tokens of earlier blocks, secondary layer j
takes those projected states as its input, so its keys and values come from the primary's
representation; for tokens of the current block it uses its own states. Everything runs through
transformers' own decoder layers: projected states enter a layer through
:func:`specdec.engine.given_layer_inputs`, at training time (the block-causal pass below) and at
inference time (written into the secondary's cache by the Tandem drafter) alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoModelForCausalLM, PreTrainedModel

from specdec.engine.modeling import attention_masks, given_layer_inputs
from specdec.errors import InvalidArgumentError, ModelNotFoundError, VocabularyMismatchError
from specdec.models.vocabulary import output_vocab_size

CONFIG_FILE = "tandem.json"
PROJECTION_INITS = ("random", "identity")
PROJECTIONS_FILE = "projections.safetensors"
SECONDARY_DIR = "secondary"


def logits_at(model: PreTrainedModel, inputs: dict, keep: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """``model``'s logits ``[keep.sum(), V]`` at the positions ``keep`` (of the sequence from ``offset``
    on), with the output head applied to those positions only. Models that scale or cap their logits
    after the head take the full forward, then the same positions."""
    config = model.config.get_text_config()
    if getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None):
        return model(**inputs).logits[:, offset:][keep]
    hidden = model.base_model(**inputs).last_hidden_state[:, offset:]
    return model.get_output_embeddings()(hidden[keep])


def default_layer_map(primary_layers: int, secondary_layers: int) -> tuple[int, ...]:
    """Evenly spaced primary hidden-state indices; the last secondary layer reads the primary's last layer."""
    return tuple(round((j + 1) * primary_layers / secondary_layers) for j in range(secondary_layers))


def primary_signature(primary: PreTrainedModel) -> dict:
    """What a secondary must agree with to read a primary: depth, width and output vocabulary."""
    return {
        "num_hidden_layers": primary.config.num_hidden_layers,
        "hidden_size": primary.config.get_text_config().hidden_size,
        "vocab_size": output_vocab_size(primary),
    }


def block_causal_mask(block_start: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
    """The boolean ``[B, 1, 2N, 2N]`` mask of one training pass over [primary stream, own stream].

    Own token i sees the primary-state tokens k < ``block_start[b, i]`` (all earlier blocks) and its
    own block's tokens from ``block_start`` up to i; primary-state tokens see each other causally
    (their outputs are never used, only the keys and values they give). ``valid`` [B, N] masks
    right padding out as keys.
    """
    batch, n = block_start.shape
    k = torch.arange(n, device=block_start.device)
    i = k[:, None]
    starts = block_start[:, :, None]  # [B, N, 1]
    own_to_primary = k[None, None, :] < starts
    own_to_own = (k[None, None, :] >= starts) & (k[None, None, :] <= i[None])
    primary_to_primary = (k[None, :] <= i).expand(batch, n, n)
    top = torch.cat([primary_to_primary, torch.zeros_like(primary_to_primary)], dim=-1)
    bottom = torch.cat([own_to_primary, own_to_own], dim=-1)
    mask = torch.cat([top, bottom], dim=1)
    if valid is not None:
        keys = torch.cat([valid, valid], dim=1).to(torch.bool)
        mask &= keys[:, None, :] | torch.eye(2 * n, dtype=torch.bool, device=mask.device)
    return mask[:, None]


def fixed_blocks(length: int, gamma: int, offset: int = 0) -> torch.Tensor:
    """Block starts ``[length]`` for blocks of γ tokens, the first one cut short by ``offset``."""
    if not 0 <= offset < gamma:
        raise InvalidArgumentError(f"block offset must be in [0, γ={gamma}), got {offset}")
    i = torch.arange(length)
    return ((i + offset) // gamma * gamma - offset).clamp(min=0)


class TandemModel(nn.Module):
    """A secondary causal LM and its projections from the primary's hidden states.

    Args:
        secondary: the secondary decoder (e.g. from :func:`specdec.training.build_draft`).
        primary: the signature of the primary it reads (:func:`primary_signature`).
        layer_map: the primary hidden-state index each secondary layer reads (default: evenly spaced).
        projection_init: ``"random"`` (the paper: nn.Linear's default) or ``"identity"`` (same widths
            only). Identity pays when secondary layer j is a copy of primary layer i and reads x^(i),
            the primary's own input to that layer: it then starts with exactly the primary's keys and
            values for earlier blocks, instead of learning the map from scratch.
    """

    def __init__(
        self,
        secondary: PreTrainedModel,
        primary: dict,
        layer_map: Sequence[int] | None = None,
        projection_init: str = "random",
    ):
        super().__init__()
        layers = secondary.config.num_hidden_layers
        depth = primary["num_hidden_layers"]
        layer_map = tuple(default_layer_map(depth, layers) if layer_map is None else layer_map)
        if len(layer_map) != layers or not all(isinstance(h, int) and 0 <= h <= depth for h in layer_map):
            raise InvalidArgumentError(
                f"layer_map must give one primary hidden-state index in [0, {depth}] per secondary layer "
                f"({layers}), got {list(layer_map)}"
            )
        if output_vocab_size(secondary) != primary["vocab_size"]:
            raise VocabularyMismatchError(
                f"the secondary predicts {output_vocab_size(secondary)} token ids but the primary "
                f"{primary['vocab_size']}"
            )
        self.secondary, self.primary, self.layer_map = secondary, dict(primary), layer_map
        width = secondary.config.get_text_config().hidden_size
        self.projections = nn.ModuleList(nn.Linear(primary["hidden_size"], width) for _ in layer_map)
        if projection_init not in PROJECTION_INITS:
            raise InvalidArgumentError(
                f"projection_init must be one of {PROJECTION_INITS}, got {projection_init!r}"
            )
        if projection_init == "identity":
            if width != primary["hidden_size"]:
                raise InvalidArgumentError(
                    f"identity projections need the secondary's width ({width}) to equal the primary's "
                    f"({primary['hidden_size']})"
                )
            with torch.no_grad():
                for projection in self.projections:
                    nn.init.eye_(projection.weight)
                    nn.init.zeros_(projection.bias)

    @property
    def primary_layers(self) -> tuple[int, ...]:
        """The primary hidden-state indices this secondary reads, each once."""
        return tuple(sorted(set(self.layer_map)))

    def check_primary(self, primary: PreTrainedModel) -> None:
        """Raise if ``primary`` is not the model this secondary was built to read."""
        theirs = primary_signature(primary)
        if theirs != self.primary:
            raise VocabularyMismatchError(
                f"this Tandem secondary reads a primary with {self.primary}, but the given model has {theirs}"
            )

    def project(self, primary_states: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """FF_Tandem^(j)(x^(ℓ(j))) for every secondary layer j, from the primary's hidden states by index."""
        return {
            j: proj(primary_states[h].to(proj.weight.dtype))
            for j, (proj, h) in enumerate(zip(self.projections, self.layer_map, strict=True))
        }

    def forward(
        self,
        tokens: torch.Tensor,
        primary_states: dict[int, torch.Tensor],
        block_start: torch.Tensor,
        valid: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits ``[B, N, V]`` of the secondary at every position, in one block-causal pass (Fig. 1);
        with ``keep`` (bool ``[B, N]``) only those positions' logits, ``[keep.sum(), V]``.

        Position i predicts token i + 1 from the projected primary states of the tokens before
        ``block_start[:, i]`` and its own states of tokens ``block_start[:, i]`` .. i. The sequence
        runs twice in one batch: a primary-state stream whose layer inputs are the projections, and
        the own stream whose logits are returned. Training keeps only answer positions: the output
        head over the whole vocabulary is most of a small secondary's cost.
        """
        batch, n = tokens.shape
        block_start = block_start.expand(batch, n).to(tokens.device)
        positions = torch.arange(n, device=tokens.device).expand(batch, n)
        positions = torch.cat([positions, positions], dim=1)
        mask = block_causal_mask(block_start, valid)
        dtype = next(self.secondary.parameters()).dtype
        given = {
            j: torch.cat([s, torch.zeros_like(s)], dim=1) for j, s in self.project(primary_states).items()
        }
        where = torch.cat(
            [torch.ones_like(tokens, dtype=torch.bool), torch.zeros_like(tokens, dtype=torch.bool)], 1
        )
        inputs = {
            "input_ids": torch.cat([tokens, tokens], dim=1),
            "position_ids": positions,
            "attention_mask": attention_masks(self.secondary.config, dtype, mask, positions, positions),
            "use_cache": False,
        }
        with given_layer_inputs(self.secondary, given, where):
            if keep is not None:
                return logits_at(self.secondary, inputs, keep, offset=n)
            return self.secondary(**inputs, logits_to_keep=n).logits

    # -- files ---------------------------------------------------------------------------------------
    def save_pretrained(self, folder: str | Path) -> None:
        """An HF folder for the secondary, the projections in safetensors, and ``tandem.json``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.secondary.save_pretrained(folder / SECONDARY_DIR)
        state = {
            f"{j}.{k}": v.detach().contiguous()
            for j, p in enumerate(self.projections)
            for k, v in p.state_dict().items()
        }
        save_file(state, folder / PROJECTIONS_FILE)
        (folder / CONFIG_FILE).write_text(
            json.dumps({"layer_map": list(self.layer_map), "primary": self.primary}, indent=1)
        )

    @classmethod
    def from_pretrained(cls, folder: str | Path, dtype: torch.dtype = torch.float32) -> TandemModel:
        folder = Path(folder)
        if not (folder / CONFIG_FILE).is_file():
            raise ModelNotFoundError(f"{folder} is not a Tandem secondary (no {CONFIG_FILE})")
        config = json.loads((folder / CONFIG_FILE).read_text())
        secondary = AutoModelForCausalLM.from_pretrained(folder / SECONDARY_DIR, dtype=dtype)
        model = cls(secondary, config["primary"], config["layer_map"])
        state = load_file(folder / PROJECTIONS_FILE)
        for j, projection in enumerate(model.projections):
            projection.load_state_dict(
                {k.split(".", 1)[1]: v for k, v in state.items() if k.startswith(f"{j}.")}
            )
        return model.to(dtype).eval()
