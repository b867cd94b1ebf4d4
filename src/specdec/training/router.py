"""Fit Tandem's adaptive block length router on a primary cache (§3.1).

The frozen secondary runs its block-causal pass over cached answers with blocks of γ (the drafting
situation: every position drafts with the primary's states of earlier blocks); the router learns to
predict TV(secondary, primary) at each answer position from the secondary's distribution alone, by
binary cross-entropy against that soft label. Held-out: the mean absolute error of its prediction,
and how often stopping at τ catches a token the primary would have rejected.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from specdec.models.router import BlockRouter, total_variation_topk
from specdec.models.tandem import TandemModel, fixed_blocks
from specdec.training.primary_cache import PrimaryCache, split


def _features_and_labels(tandem: TandemModel, router: BlockRouter, batch: dict, gamma: int, offset: int):
    with torch.no_grad():
        starts = fixed_blocks(batch["tokens"].shape[1], gamma, offset)[None]
        logits = tandem(batch["tokens"], batch["hidden"], starts, valid=batch["valid"])[:, :-1]
        features = router.features(logits, tandem.secondary.get_input_embeddings())
        tv = total_variation_topk(
            logits, batch["topk_values"][:, :-1], batch["topk_ids"][:, :-1], batch["logsumexp"][:, :-1]
        )
        top1_disagrees = logits.argmax(-1) != batch["topk_ids"][:, :-1, 0]
    mask = (batch["next_is_answer"] & batch["valid"])[:, :-1]
    return features[mask], tv[mask].clamp(0, 1), top1_disagrees[mask]


def train_router(
    tandem: TandemModel,
    cache: PrimaryCache,
    output: Path,
    *,
    steps: int = 300,
    batch_size: int = 8,
    lr: float = 1e-3,
    gamma: int = 5,
    tau: float = 0.8,
    heldout_fraction: float = 0.05,  # as train tandem: the router never sees the held-out answers
    seed: int = 0,
    top_k: int = 4,
) -> dict:
    """Train a :class:`BlockRouter` for ``tandem``; write it (and ``router_log.json``) to ``output``."""
    tandem.eval().requires_grad_(False)
    width = tandem.secondary.get_input_embeddings().weight.shape[1]
    torch.manual_seed(seed)
    router = BlockRouter(width, top_k=top_k)
    optimizer = torch.optim.AdamW(router.parameters(), lr=lr)
    train_ids, heldout_ids = split(cache, heldout_fraction)
    started, losses = time.perf_counter(), []
    for step in range(steps):
        generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
        picks = torch.randint(0, len(train_ids), (batch_size,), generator=generator).tolist()
        offset = int(torch.randint(0, gamma, (1,), generator=generator))
        features, tv, _ = _features_and_labels(
            tandem, router, cache.batch([train_ids[i] for i in picks]), gamma, offset
        )
        loss = torch.nn.functional.binary_cross_entropy_with_logits(router.mlp(features).squeeze(-1), tv)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    router.eval()
    errors, caught, rejected, stopped = [], 0, 0, 0
    with torch.no_grad():
        for start in range(0, len(heldout_ids), batch_size):
            batch = cache.batch(heldout_ids[start : start + batch_size])
            features, tv, disagrees = _features_and_labels(tandem, router, batch, gamma, 0)
            predicted = torch.sigmoid(router.mlp(features).squeeze(-1))
            errors.append((predicted - tv).abs())
            caught += int((disagrees & (predicted > tau)).sum())
            rejected += int(disagrees.sum())
            stopped += int((predicted > tau).sum())
    errors = torch.cat(errors) if errors else torch.zeros(0)
    report = {
        "steps": steps,
        "gamma": gamma,
        "tau": tau,
        "train_loss_last": sum(losses[-20:]) / max(1, len(losses[-20:])),
        "heldout_mean_abs_error": float(errors.mean()) if len(errors) else None,
        "heldout_disagreements_caught_at_tau": caught / max(1, rejected),
        "heldout_stop_rate_at_tau": stopped / max(1, len(errors)),
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    router.save_pretrained(output)
    (Path(output) / "router_log.json").write_text(json.dumps(report, indent=1))
    return report
