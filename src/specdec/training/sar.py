"""BiTA's semi-autoregressive (SAR) objective, packed, and the tree walk that scores an adapter.

A training sample is a target-written sequence with G mask groups packed after it (the official code
packs up to 64): group g after cut k_g (the last token it may see) holds M mask tokens at positions
k_g + 1 .. k_g + M, labelled with the tokens at k_g + 2 .. k_g + M + 1 (the model's own output at k_g
predicts k_g + 1). Ordinary tokens attend causally to each other only (their states are the frozen
model's); mask tokens attend to the sequence up to their cut, to the prompt tokens and to their own
group's earlier masks. The sequence runs first, without autograd, into a cache; then every group's
masks run in one pass over it, as decoding runs them. The trainer (``training.bita``) and ``eval
bita`` (``benchmarks.bita_eval``) share it.
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
    """``[B, G, M, V]`` logits of every mask token: the sequence once, then every group's masks in one
    pass over its keys and values, the prompt states' and their own group's earlier masks'."""
    tokens, valid, cuts = batch["tokens"], batch["valid"], batch["cuts"]
    size, n = tokens.shape
    groups, masks = cuts.shape[1], adapter.num_masks
    device, dtype = tokens.device, next(model.parameters()).dtype
    offsets = torch.arange(1, masks + 1, device=device).repeat(groups)  # [G·M]: i = 1..M
    group_of = torch.arange(groups, device=device).repeat_interleave(masks)
    mask_cut = cuts[:, group_of]  # [B, G·M]
    positions = mask_cut.clamp(min=0) + offsets
    sequence = sequence_states(model, tokens, valid)

    k = torch.arange(n, device=device)
    sees_seq = (k[None, None, :] <= mask_cut[:, :, None]) & valid[:, None, :]  # [B, G·M, n]
    same_group = group_of[:, None] == group_of[None, :]
    earlier = offsets[None, :] <= offsets[:, None]  # with itself: an unused group sees at least that
    mask = torch.cat([sees_seq, (same_group & earlier)[None].expand(size, -1, -1)], dim=2)
    key_pos = torch.cat([k.expand(size, n), positions], dim=1)
    prefix = adapter.prefix(model)
    past = DynamicCache()
    for layer, states in enumerate(sequence.layers):
        keys, values = states.keys, states.values
        if prefix:  # the prompt's states first, seen by every mask token
            expand = (size, -1, -1, -1)
            keys = torch.cat([prefix[layer][0].to(keys.dtype).expand(*expand), keys], dim=2)
            values = torch.cat([prefix[layer][1].to(values.dtype).expand(*expand), values], dim=2)
        past.update(keys, values, layer)
    if prefix:
        p = prefix[0][0].shape[2]
        mask = torch.cat([torch.ones(size, groups * masks, p, dtype=torch.bool, device=device), mask], dim=2)
        key_pos = torch.cat([torch.full((size, p), 2**40, device=device), key_pos], dim=1)
    inputs = adapter.mask_embeddings(groups, dtype)[None].expand(size, -1, -1)
    hidden = model.base_model(
        inputs_embeds=inputs,
        position_ids=positions,
        attention_mask=attention_masks(model.config, dtype, mask[:, None], positions, key_pos),
        **with_cache(model.base_model, past),
        use_cache=True,
    ).last_hidden_state
    return model.get_output_embeddings()(hidden).view(size, groups, masks, -1)


@torch.no_grad()
def sequence_states(model: PreTrainedModel, tokens: torch.Tensor, valid: torch.Tensor) -> DynamicCache:
    """The frozen model's keys and values of the right-padded sequences, causal. No trained weight
    reaches them (ordinary tokens never see the prompt or a mask), so they run once without autograd
    and the backward pass covers only the mask tokens: on a 2-core CPU ~1.5 GB a step against ~5.2 GB
    for one joint pass over sequence and masks, and about its time (3.98 against 4.49 s in a probe,
    ~5 s in campaign runs of either; `benchmarks/results/sar_memory_probe_2026-11-30.log`)."""
    size, n = tokens.shape
    k = torch.arange(n, device=tokens.device)
    causal = (k[None, :] <= k[:, None])[None] & valid[:, None, :]
    mask = causal | torch.eye(n, dtype=torch.bool, device=k.device)  # padding attends to itself
    positions = k.expand(size, n)
    cache = DynamicCache()
    dtype = next(model.parameters()).dtype
    model.base_model(
        input_ids=tokens,
        position_ids=positions,
        attention_mask=attention_masks(model.config, dtype, mask[:, None], positions, positions),
        **with_cache(model.base_model, cache),
        use_cache=True,
    )
    return cache


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
