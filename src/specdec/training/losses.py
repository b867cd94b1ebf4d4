"""Training losses for drafts: next-token cross-entropy and logit distillation from the target."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from specdec.errors import InvalidArgumentError

DISTILL_KINDS = ("kl", "soft_ce")


def check_distill_params(weight: float, temperature: float, kind: str = "kl") -> None:
    if not (isinstance(weight, int | float) and 0.0 <= weight <= 1.0):
        raise InvalidArgumentError(f"distillation weight λ must be in [0, 1], got {weight!r}")
    if not (isinstance(temperature, int | float) and math.isfinite(temperature) and temperature > 0):
        raise InvalidArgumentError(f"distillation temperature must be > 0, got {temperature!r}")
    if kind not in DISTILL_KINDS:
        raise InvalidArgumentError(f"distillation loss must be one of {DISTILL_KINDS}, got {kind!r}")


def cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean next-token cross-entropy; ``logits[:, t]`` predicts ``labels[:, t]``."""
    loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none")
    return _masked_mean(loss, mask)


def distillation(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    temperature: float = 1.0,
    kind: str = "kl",
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """KL(q_T ‖ p_T) or −Σ q_T log p_T per position, scaled by T² so gradients keep their size.

    q is the target (teacher), p the draft (student). Forward KL is zero exactly when the draft
    matches the target, which is also when speculative acceptance α = 1 − TV(p, q) is 1.
    """
    check_distill_params(0.0, temperature, kind)
    log_p = F.log_softmax(student_logits.float() / temperature, dim=-1)
    log_q = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    q = log_q.exp()
    per_token = (q * (log_q - log_p)).sum(-1) if kind == "kl" else -(q * log_p).sum(-1)
    return _masked_mean(per_token.flatten(), mask) * temperature**2


def mixed_loss(ce: torch.Tensor, kd: torch.Tensor | None, weight: float) -> torch.Tensor:
    """(1 − λ)·CE + λ·KD, Tandem-Distil's mixture (λ = 0 is plain CE)."""
    if kd is None or weight == 0.0:
        return ce
    return (1.0 - weight) * ce + weight * kd


def _masked_mean(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return values.mean()
    mask = mask.flatten().to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)
