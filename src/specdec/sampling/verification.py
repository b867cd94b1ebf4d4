"""Verification by matching: keep draft tokens while they equal the target's own choice.

This one walk serves greedy decoding (the choice is the argmax), lossless coupled sampling (the
choice is the target's Gumbel-max draw with the position's own noise, the draw plain decoding would
make) and, with an extra ``keep`` rule, BiLD. Every emitted token is the target's choice unless the
rule deliberately keeps a different draft token, so a lossless rule emits exactly what plain
decoding emits with the same seed, whatever the drafter, γ or batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from specdec.errors import InvalidArgumentError


@dataclass
class Verification:
    """Outcome of verifying one block of γ draft tokens per row.

    Each row emits its first ``num_accepted`` draft tokens followed by ``next_token``: the token
    resampled after a rejection, or the bonus token when the whole draft was accepted (BiLD: the
    large model's correction). It is emitted but not yet fed to the target: the next step feeds it.
    """

    num_accepted: torch.Tensor  # [B] long
    next_token: torch.Tensor  # [B] long


# choose(i, rows) -> the target's token at block position i for batch rows ``rows`` ([n] long)
Choose = Callable[[int, torch.Tensor], torch.Tensor]
# keep(i, rows, choice) -> [n] bool: draft tokens a lossy rule keeps although they differ from choice
Keep = Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor]


def match_verify(
    draft_tokens: torch.Tensor,
    choose: Choose,
    draft_lengths: torch.Tensor | None = None,
    keep: Keep | None = None,
) -> Verification:
    """Walk the block position by position: a row keeps draft token i while it equals the target's
    choice there (or ``keep`` allows it); at its first other position it emits that choice.

    ``choose`` is called only for rows still accepting at position i, so randomness for positions
    no row reaches is never drawn. Positions past a row's ``draft_lengths`` are never accepted, so a
    row whose short draft was fully accepted takes the choice at its own length (its bonus token).
    """
    check_draft(draft_tokens, allow_empty=True)
    batch, gamma = draft_tokens.shape
    lengths = check_lengths(draft_lengths, batch, gamma)
    num_accepted = torch.zeros(batch, dtype=torch.long)
    next_token = torch.zeros(batch, dtype=torch.long)
    rows = torch.arange(batch)
    for i in range(gamma + 1):
        if len(rows) == 0:
            break
        choice = choose(i, rows).cpu().long()
        go_on = torch.zeros(len(rows), dtype=torch.bool)
        if i < gamma:
            proposed = draft_tokens[rows, i].cpu()
            go_on = proposed == choice
            if keep is not None:
                go_on |= keep(i, rows, choice).cpu()
            go_on &= i < lengths[rows]
        stop = rows[~go_on]
        num_accepted[stop], next_token[stop] = i, choice[~go_on]
        rows = rows[go_on]
    return Verification(num_accepted, next_token)


def greedy_verify(
    draft_tokens: torch.Tensor, target_tokens: torch.Tensor, draft_lengths: torch.Tensor | None = None
) -> Verification:
    """Greedy verification against the target's argmax tokens ``[B, γ+1]``: the longest matching prefix."""
    check_draft(draft_tokens)
    batch, gamma = draft_tokens.shape
    if tuple(target_tokens.shape) != (batch, gamma + 1):
        raise InvalidArgumentError(
            f"target_tokens must be [B, γ+1] = {(batch, gamma + 1)} for draft_tokens "
            f"{tuple(draft_tokens.shape)}, got {tuple(target_tokens.shape)}"
        )
    return match_verify(draft_tokens, lambda i, rows: target_tokens[rows, i], draft_lengths)


def check_draft(draft_tokens: torch.Tensor, allow_empty: bool = False) -> None:
    shape = tuple(draft_tokens.shape)
    if draft_tokens.dim() != 2 or (shape[1] < 1 and not allow_empty):
        raise InvalidArgumentError(f"draft_tokens must be [B, γ] with γ >= 1, got {shape}")
    if draft_tokens.is_floating_point() or draft_tokens.is_complex():
        raise InvalidArgumentError(f"draft_tokens must hold integer token ids, got {draft_tokens.dtype}")


def check_lengths(draft_lengths: torch.Tensor | None, batch: int, gamma: int) -> torch.Tensor:
    if draft_lengths is None:
        return torch.full((batch,), gamma, dtype=torch.long)
    lengths = draft_lengths.cpu().long()
    if tuple(lengths.shape) != (batch,) or bool(((lengths < 0) | (lengths > gamma)).any()):
        raise InvalidArgumentError(f"draft_lengths must be [B] = [{batch}] with values in [0, {gamma}]")
    return lengths
