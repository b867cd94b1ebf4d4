"""BiTA's semi-autoregressive (SAR) objective, packed, and the tree walk that scores an adapter.

A training sample is a target-written sequence with G mask groups packed after it (the official code
packs up to 64): group g after cut k_g (the last token it may see) holds M mask tokens at positions
k_g + 1 .. k_g + M, labelled with the tokens at k_g + 2 .. k_g + M + 1 (the model's own output at k_g
predicts k_g + 1). One forward pass computes every group: ordinary tokens attend causally to each
other only (their states are the frozen model's), mask tokens attend to the sequence up to their cut,
to the prompt tokens and to their own group's earlier masks. The trainer (``training.bita``) and
``eval bita`` (``benchmarks.bita_eval``) share it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import DynamicCache, PreTrainedModel

from specdec.engine.modeling import attention_masks, with_cache
from specdec.models.bita import BiTAAdapter
from specdec.training.answers import TargetAnswer
from specdec.training.primary_cache import sequence_of

EFFICIENT = (5, 4, 3, 2)  # candidates per depth of the efficient tree (the trainer's default selection)
IGNORE = -100


def sar_batch(
    answers: Sequence[TargetAnswer], groups: int, masks: int, max_len: int, generator: torch.Generator
) -> dict:
    """Right-padded sequences with ``groups`` random cuts each inside the answer, and their labels.

    ``cuts`` [B, G] is the last position a group sees (−1: unused); ``labels`` [B, G, M] the tokens
    at cut + 2 .. cut + M + 1 (``IGNORE`` past the end)."""
    seqs = [sequence_of(a, max_len) for a in answers]
    width = max(len(tokens) for tokens, _ in seqs)
    batch = len(seqs)
    tokens = torch.zeros(batch, width, dtype=torch.long)
    valid = torch.zeros(batch, width, dtype=torch.bool)
    cuts = torch.full((batch, groups), -1, dtype=torch.long)
    labels = torch.full((batch, groups, masks), IGNORE, dtype=torch.long)
    for row, (ids, next_is_answer) in enumerate(seqs):
        n = len(ids)
        tokens[row, :n], valid[row, :n] = torch.tensor(ids), True
        # a cut k predicts k + 2 ..: the first answer-predicting position k has next_is_answer[k]
        candidates = [k for k in range(n - 2) if next_is_answer[k]]
        if not candidates:
            continue
        picks = torch.randint(0, len(candidates), (groups,), generator=generator).tolist()
        for g, pick in enumerate(picks):
            k = candidates[pick]
            cuts[row, g] = k
            for i in range(masks):
                if k + 2 + i < n:
                    labels[row, g, i] = ids[k + 2 + i]
    return {"tokens": tokens, "valid": valid, "cuts": cuts, "labels": labels}


def sar_logits(model: PreTrainedModel, adapter: BiTAAdapter, batch: dict) -> torch.Tensor:
    """``[B, G, M, V]`` logits of every mask token, in one pass over sequence + packed mask groups."""
    tokens, valid, cuts = batch["tokens"], batch["valid"], batch["cuts"]
    size, n = tokens.shape
    groups, masks = cuts.shape[1], adapter.num_masks
    extra = groups * masks
    device = tokens.device
    dtype = next(model.parameters()).dtype
    embeds = model.get_input_embeddings()(tokens)
    mask_embeds = adapter.mask_embeddings(groups, embeds.dtype)[None].expand(size, -1, -1)
    inputs = torch.cat([embeds, mask_embeds], dim=1)
    offsets = torch.arange(1, masks + 1, device=device).repeat(groups)  # [G·M]: i = 1..M
    group_of = torch.arange(groups, device=device).repeat_interleave(masks)
    mask_cut = cuts[:, group_of]  # [B, G·M]
    positions = torch.cat(
        [torch.arange(n, device=device).expand(size, n), mask_cut.clamp(min=0) + offsets], 1
    )

    k = torch.arange(n, device=device)
    ordinary = (k[None, :] <= k[:, None])[None] & valid[:, None, :]  # [B, n, n]
    top = torch.cat([ordinary, torch.zeros(size, n, extra, dtype=torch.bool, device=device)], dim=2)
    top |= torch.eye(n, n + extra, dtype=torch.bool, device=device)  # padding attends to itself
    sees_seq = (k[None, None, :] <= mask_cut[:, :, None]) & valid[:, None, :]  # [B, G·M, n]
    same_group = group_of[:, None] == group_of[None, :]
    earlier = offsets[None, :] <= offsets[:, None]
    sees_masks = (same_group & earlier)[None].expand(size, -1, -1)
    bottom = torch.cat([sees_seq, sees_masks], dim=2)
    bottom |= torch.eye(n + extra, dtype=torch.bool, device=device)[n:]  # unused groups see themselves
    mask = torch.cat([top, bottom], dim=1)  # [B, n + G·M, n + G·M]

    prefix = adapter.prefix(model)
    past, key_pos = None, positions
    if prefix:
        past = DynamicCache()
        for layer, (keys, values) in enumerate(prefix):
            past.update(
                keys.to(dtype).expand(size, -1, -1, -1), values.to(dtype).expand(size, -1, -1, -1), layer
            )
        p = prefix[0][0].shape[2]
        sees_prefix = torch.zeros(size, n + extra, p, dtype=torch.bool, device=device)
        sees_prefix[:, n:] = True
        mask = torch.cat([sees_prefix, mask], dim=2)
        key_pos = torch.cat([torch.full((size, p), 2**40, device=device), positions], dim=1)
    hidden = model.base_model(
        inputs_embeds=inputs,
        position_ids=positions,
        attention_mask=attention_masks(model.config, dtype, mask[:, None], positions, key_pos),
        **with_cache(model.base_model, past),
        use_cache=past is not None,
    ).last_hidden_state[:, n:]
    return model.get_output_embeddings()(hidden).view(size, groups, masks, -1)


def sar_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. 1: cross-entropy of every mask token against the target's own future token."""
    used = labels != IGNORE
    if not bool(used.any()):
        return logits.sum() * 0.0
    return torch.nn.functional.cross_entropy(logits[used].float(), labels[used])


def accepted_per_step(logits: torch.Tensor, labels: torch.Tensor, widths: Sequence[int]) -> torch.Tensor:
    """Tokens a tree (only top-1 nodes have children; ``widths`` per depth) accepts from each group:
    depth d is reached while every earlier label was its mask's top-1, and counts if label d is in the
    top ``widths[d]``. ``[B, G]`` float; groups with no label are NaN."""
    masks = min(logits.shape[2], len(widths))
    widest = max(widths[:masks])
    top = logits[:, :, :masks].topk(widest, dim=-1).indices  # [B, G, M, widest]
    hit = torch.zeros(labels.shape[:2], dtype=torch.float, device=logits.device)
    alive = torch.ones(labels.shape[:2], dtype=torch.bool, device=logits.device)
    for d in range(masks):
        label = labels[:, :, d]
        inside = (top[:, :, d, : widths[d]] == label[..., None]).any(-1) & (label != IGNORE)
        hit += (alive & inside).float()
        alive &= top[:, :, d, 0] == label
    hit[labels[:, :, 0] == IGNORE] = float("nan")
    return hit
