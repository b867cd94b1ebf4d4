"""The sampling settings a request brings: temperature, top-k and top-p, validated once (so the hot loop
never checks), per batch or per row (requests with different settings decoded together).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specdec.errors import InvalidArgumentError


@dataclass(frozen=True)
class SamplingConfig:
    """How target and draft logits become distributions; validated once, so the hot loop never checks."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        t = _as_float(self.temperature)
        if t is None or not math.isfinite(t) or t < 0:
            raise InvalidArgumentError(
                f"temperature must be a finite number >= 0 (0 means greedy), got {self.temperature!r}"
            )
        k = self.top_k
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidArgumentError(f"top_k must be an integer >= 0 (0 disables top-k), got {k!r}")
        p = _as_float(self.top_p)
        if p is None or not 0 < p <= 1:
            raise InvalidArgumentError(f"top_p must be in (0, 1] (1 disables top-p), got {self.top_p!r}")
        # Plain floats from here on (a huge int temperature would overflow inside torch).
        object.__setattr__(self, "temperature", t)
        object.__setattr__(self, "top_p", p)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class RowSampling:
    """Each row's own :class:`SamplingConfig`: requests with different settings in one batch (greedy
    rows beside sampled ones). Everything that takes a config takes one of these for a batch."""

    configs: tuple[SamplingConfig, ...]

    @property
    def greedy(self) -> bool:
        """Whether every row is greedy (then no distribution needs building)."""
        return all(c.greedy for c in self.configs)

    def select(self, rows: torch.Tensor) -> RowSampling:
        """The configs of batch positions ``rows``."""
        return RowSampling(tuple(self.configs[r] for r in rows.tolist()))

    def groups(self) -> list[tuple[SamplingConfig, torch.Tensor]]:
        """Each distinct config with the rows that use it."""
        rows: dict[SamplingConfig, list[int]] = {}
        for row, config in enumerate(self.configs):
            rows.setdefault(config, []).append(row)
        return [(config, torch.tensor(index)) for config, index in rows.items()]


Sampling = SamplingConfig | RowSampling


def _as_float(value) -> float | None:
    """A real number as a float; None for anything else (bools, strings, numbers too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
