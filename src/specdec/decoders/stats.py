"""What one generate call did, so every speedup can be explained by α, calls and time split."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch


def sync_device(device: torch.device) -> None:
    """Wait for ``device``'s queued kernels: launches are asynchronous on accelerators, and a timer
    must measure completed work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class GenerationStats:
    """Counters and timings of one call. Tokens-per-call figures are per row (batch-normalised)."""

    new_tokens: int = 0
    target_calls: int = 0  # decoding forwards of the target (prefill excluded)
    draft_calls: int = 0  # forwards of a draft model (0 for model-free drafters)
    proposed_tokens: int = 0
    accepted_tokens: int = 0
    row_steps: int = 0  # Σ over target calls of the rows in the batch
    short_drafts: int = 0  # row-steps whose draft stopped before γ (BiLD: a fallback)
    rejections: int = 0  # row-steps where the target replaced a draft token (BiLD: a rollback)
    prefill_time: float = 0.0
    target_time: float = 0.0
    draft_time: float = 0.0
    total_time: float = 0.0
    accepted_histogram: Counter = field(default_factory=Counter)  # accepted drafts per row-step

    def count_step(self, gamma: int, lengths: torch.Tensor, accepted: torch.Tensor) -> None:
        """One target call over ``len(lengths)`` rows that drafted ``lengths`` and kept ``accepted``."""
        proposed, kept = lengths.tolist(), accepted.tolist()
        self.target_calls += 1
        self.row_steps += len(proposed)
        self.proposed_tokens += sum(proposed)
        self.accepted_tokens += sum(kept)
        self.short_drafts += sum(n < gamma for n in proposed)
        self.rejections += sum(a < n for a, n in zip(kept, proposed, strict=True))
        self.accepted_histogram.update(kept)

    @property
    def acceptance_rate(self) -> float:
        """α: the fraction of proposed draft tokens the target accepted."""
        return self.accepted_tokens / self.proposed_tokens if self.proposed_tokens else 0.0

    @property
    def tokens_per_target_call(self) -> float:
        return self.new_tokens / self.row_steps if self.row_steps else 0.0

    @property
    def fallback_rate(self) -> float:
        """Share of row-steps whose draft stopped early (BiLD's fallback %, SpS: lookup misses)."""
        return self.short_drafts / self.row_steps if self.row_steps else 0.0

    @property
    def rollback_rate(self) -> float:
        """Share of row-steps with a replaced draft token (BiLD's rollback %, SpS: a rejection)."""
        return self.rejections / self.row_steps if self.row_steps else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.total_time if self.total_time else 0.0

    @property
    def overhead_time(self) -> float:
        return max(0.0, self.total_time - self.prefill_time - self.target_time - self.draft_time)

    @contextmanager
    def timed(self, attr: str, device: torch.device):
        start = time.perf_counter()
        try:
            yield
        finally:
            sync_device(device)
            setattr(self, attr, getattr(self, attr) + time.perf_counter() - start)

    def as_dict(self) -> dict:
        return {
            "new_tokens": self.new_tokens,
            "target_calls": self.target_calls,
            "draft_calls": self.draft_calls,
            "proposed_tokens": self.proposed_tokens,
            "accepted_tokens": self.accepted_tokens,
            "row_steps": self.row_steps,
            "acceptance_rate": self.acceptance_rate,
            "tokens_per_target_call": self.tokens_per_target_call,
            "fallback_rate": self.fallback_rate,
            "rollback_rate": self.rollback_rate,
            "tokens_per_second": self.tokens_per_second,
            "prefill_time": self.prefill_time,
            "target_time": self.target_time,
            "draft_time": self.draft_time,
            "overhead_time": self.overhead_time,
            "total_time": self.total_time,
            "accepted_histogram": dict(sorted(self.accepted_histogram.items())),
        }

    def __str__(self) -> str:
        return (
            f"{self.new_tokens} tokens in {self.total_time:.2f}s ({self.tokens_per_second:.1f} tok/s); "
            f"target calls {self.target_calls}, draft calls {self.draft_calls}, "
            f"α {self.acceptance_rate:.2f} ({self.accepted_tokens}/{self.proposed_tokens}), "
            f"{self.tokens_per_target_call:.2f} tokens/target call; "
            f"time: prefill {self.prefill_time:.2f}s, target {self.target_time:.2f}s, "
            f"draft {self.draft_time:.2f}s, overhead {self.overhead_time:.2f}s"
        )
