"""What a forward of the engine returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class ExtendOutput:
    logits: torch.Tensor  # [B, num_logits, V]
    hidden_states: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> [B, T, d]
