"""What the Tandem trainer optimises and how it scores a secondary (or the equally sized draft) on held-out
answers of a primary cache: the block-causal pass (Fig. 1) over blocks of γ, CE on the target's next
answer token and the soft CE to its cached top-k distribution, and the held-out top-1 agreement,
Σ_top-k min(p, q) (a lower bound of α) and the tokens a greedy SPEED block of γ accepts (γ = 3, 5, 7).
Shared by :mod:`specdec.training.tandem` and the Tandem evaluation benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from specdec.models.tandem import TandemModel, fixed_blocks, logits_at
from specdec.training.primary_cache import PrimaryCache

EVAL_GAMMAS = (3, 5, 7)


def student_logits(
    model,
    batch: dict,
    gamma: int,
    offset: int = 0,
    tandem: bool | None = None,
    keep: torch.Tensor | None = None,
) -> torch.Tensor:
    """``[B, N, V]``: the Tandem block-causal pass with blocks of γ, or the plain draft's forward; with
    ``keep`` (bool ``[B, N]``) only the logits at those positions, ``[keep.sum(), V]``.

    ``tandem`` says which when ``model`` is wrapped (accelerate's DDP); by default its type does."""
    tokens = batch["tokens"]
    if isinstance(model, TandemModel) if tandem is None else tandem:
        starts = fixed_blocks(tokens.shape[1], gamma, offset)[None]
        return model(tokens, batch["hidden"], starts, valid=batch["valid"], keep=keep)
    inputs = {"input_ids": tokens, "attention_mask": batch["valid"].long()}
    return model(**inputs).logits if keep is None else logits_at(model, inputs, keep)


def answer_positions(batch: dict) -> torch.Tensor:
    """Bool ``[B, N]``: positions whose next token is an answer token (the last position never is)."""
    return batch["next_is_answer"] & batch["valid"]


def losses(logits: torch.Tensor, batch: dict, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """CE on the next answer token, and the soft CE to the primary's top-k distribution, both averaged
    over answer positions; ``logits`` are those positions' only, ``[M, V]`` (see ``answer_positions``)."""
    keep = answer_positions(batch)
    logits = logits.float()
    if not len(logits):
        return logits.sum(), logits.sum()  # zero, still attached to the graph
    targets = batch["tokens"][:, 1:][keep[:, :-1]]
    ce = torch.nn.functional.cross_entropy(logits, targets)
    teacher = torch.softmax(batch["topk_values"][keep].float() / temperature, dim=-1)
    log_p = torch.log_softmax(logits / temperature, dim=-1).gather(-1, batch["topk_ids"][keep])
    kd = -(teacher * log_p).sum(-1).mean() * temperature**2
    return ce, kd


@torch.no_grad()
def evaluate_on_cache(
    model: TandemModel | PreTrainedModel,
    cache: PrimaryCache,
    indices: Sequence[int],
    gamma_train: int,
    batch: int = 8,
) -> dict:
    """Held-out top-1 agreement, Σ_top-k min(p, q) ≤ α, and greedy SPEED tokens accepted per block of γ."""
    was_training, device = model.training, next(model.parameters()).device
    model.eval()
    agree = alpha = positions = 0.0
    accepted = {g: [0.0, 0] for g in EVAL_GAMMAS}
    for start in range(0, len(indices), batch):
        data = cache.batch(indices[start : start + batch], device)
        mask = (data["next_is_answer"] & data["valid"])[:, :-1]
        target = data["topk_ids"][:, :-1, 0]
        logits = student_logits(model, data, gamma_train)[:, :-1].float()
        agree += ((logits.argmax(-1) == target) & mask).sum().item()
        p = torch.softmax(logits, -1).gather(-1, data["topk_ids"][:, :-1])
        q = torch.exp(data["topk_values"][:, :-1] - data["logsumexp"][:, :-1, None])
        alpha += (torch.minimum(p, q).sum(-1) * mask).sum().item()
        positions += mask.sum().item()
        for gamma in EVAL_GAMMAS:
            blocks = student_logits(model, data, gamma)[:, :-1] if isinstance(model, TandemModel) else logits
            matches = (blocks.argmax(-1) == target) & mask
            for begin in range(0, matches.shape[1] - gamma + 1, gamma):
                inside = mask[:, begin : begin + gamma].all(-1)  # blocks wholly inside an answer
                run = matches[:, begin : begin + gamma].long().cumprod(-1).sum(-1)
                accepted[gamma][0] += run[inside].sum().item()
                accepted[gamma][1] += int(inside.sum())
    model.train(was_training)
    report = {"heldout_agreement": agree / max(positions, 1), "heldout_alpha_topk": alpha / max(positions, 1)}
    report |= {f"accepted_per_block_g{g}": total / max(n, 1) for g, (total, n) in accepted.items()}
    return report
