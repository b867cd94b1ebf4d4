"""The adaptive block length router of Tandem + SPEED (§3.1): a 2-layer MLP that predicts, from the
secondary's own next-token distribution, how likely the primary is to disagree with it.

Its inputs are the secondary's entropy, its top-k probabilities and its embeddings of those top-k
tokens; its target is TV(secondary, primary) at that position. During drafting the secondary stops
before a token whose predicted disagreement exceeds τ and hands the block to the primary, so blocks
are long where the secondary is reliable and short where it is not, up to the γ cap.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from specdec.errors import InvalidArgumentError, ModelNotFoundError

CONFIG_FILE = "router.json"
WEIGHTS_FILE = "router.safetensors"


class BlockRouter(nn.Module):
    def __init__(self, embed_dim: int, top_k: int = 4, hidden: int = 128):
        super().__init__()
        if top_k < 1 or hidden < 1:
            raise InvalidArgumentError(f"router needs top_k >= 1 and hidden >= 1, got {top_k}, {hidden}")
        self.embed_dim, self.top_k, self.hidden = embed_dim, top_k, hidden
        self.mlp = nn.Sequential(
            nn.Linear(1 + top_k + top_k * embed_dim, hidden), nn.GELU(), nn.Linear(hidden, 1)
        )

    def features(self, logits: torch.Tensor, embeddings: nn.Embedding) -> torch.Tensor:
        """[entropy, top-k probabilities, top-k token embeddings] of each distribution ``[..., V]``."""
        log_p = torch.log_softmax(logits.float(), dim=-1)
        entropy = -(log_p.exp() * log_p).sum(-1, keepdim=True)
        top, ids = log_p.topk(self.top_k, dim=-1)
        embedded = embeddings(ids).flatten(-2).float()
        return torch.cat([entropy, top.exp(), embedded], dim=-1)

    def forward(self, logits: torch.Tensor, embeddings: nn.Embedding) -> torch.Tensor:
        """Logit of the predicted disagreement (sigmoid: its probability) per position."""
        return self.mlp(self.features(logits, embeddings)).squeeze(-1)

    def save_pretrained(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, folder / WEIGHTS_FILE)
        config = {"embed_dim": self.embed_dim, "top_k": self.top_k, "hidden": self.hidden}
        (folder / CONFIG_FILE).write_text(json.dumps(config))

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> BlockRouter:
        folder = Path(folder)
        if not (folder / CONFIG_FILE).is_file():
            raise ModelNotFoundError(f"{folder} holds no router ({CONFIG_FILE} missing)")
        router = cls(**json.loads((folder / CONFIG_FILE).read_text()))
        router.load_state_dict(load_file(folder / WEIGHTS_FILE))
        return router.eval()


def total_variation_topk(
    logits: torch.Tensor, topk_values: torch.Tensor, topk_ids: torch.Tensor, logsumexp: torch.Tensor
) -> torch.Tensor:
    """TV(p, q) from the full p and q's top-k (exact probabilities): the top-k terms, and the rest of the
    mass compared as one lump (a lower bound, exact when q has no mass outside its top-k)."""
    p = torch.softmax(logits.float(), dim=-1)
    p_top = p.gather(-1, topk_ids)
    q_top = torch.exp(topk_values - logsumexp[..., None])
    rest = ((1 - p_top.sum(-1)) - (1 - q_top.sum(-1))).abs()
    return 0.5 * ((p_top - q_top).abs().sum(-1) + rest)
