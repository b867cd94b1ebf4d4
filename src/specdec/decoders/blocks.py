"""One step's block, from the draft to what stays: each row's draft cut to what it can use, the
target's block for it ([pending token, draft tokens, a drafter's extra positions] with the masks that
shape it), what the target's cache keeps after the verdict (a count for chains, a path for trees) and
where each emitted token came from. Pure functions of the draft and the verdict, so the loop that calls
them stays a sequence of steps."""

from __future__ import annotations

from dataclasses import replace

import torch

from specdec.drafters import Draft
from specdec.engine import Engine
from specdec.sampling import TreeVerification, Verification, chain_parents, tree_attention

# Provenance of an emitted token (StepOutput.provenance)
ACCEPTED, RESAMPLED, BONUS, TARGET = "accepted", "resampled", "bonus", "target"


def cap(draft: Draft, usable: torch.Tensor) -> Draft:
    """A chain cut to each row's usable length, then to the longest row: a row verifies only the draft
    tokens it can emit, so what it emits never depends on the other rows' budgets. A tree keeps its one
    shape, and each row keeps nodes down to its usable depth only (``depth_caps``)."""
    if draft.parents is not None:
        return replace(draft, depth_caps=usable.clone())
    lengths = torch.minimum(draft.row_lengths(), usable)
    width = int(lengths.max()) if len(lengths) else 0
    probs = None if draft.probs is None else draft.probs[:, :width]
    return Draft(draft.tokens[:, :width], probs, lengths)


def verify_block(pending: torch.Tensor, draft: Draft) -> tuple[torch.Tensor, dict]:
    """The target's block for a draft, [pending token, draft tokens, the drafter's extra positions], and
    the :meth:`~specdec.engine.Engine.extend` options that shape it (padding, tree mask, embeddings)."""
    if draft.gamma == 0 and draft.extra is None:  # a plain step
        return pending[:, None], {}
    lengths = draft.row_lengths()
    tokens = torch.cat([pending[:, None], draft.tokens], dim=1)
    token_mask = torch.arange(draft.gamma + 1)[None, :] <= lengths[:, None]
    if draft.parents is None and draft.extra is None:
        return tokens, {"token_mask": token_mask}
    mask = tree_attention(draft.parents if draft.parents is not None else chain_parents(draft.gamma))
    options: dict = {}
    if draft.extra is not None:
        batch, extra, size = draft.extra.embeds.shape
        nodes = tokens.shape[1]
        width = nodes + extra
        full = torch.zeros(width, width, dtype=torch.bool)
        full[:nodes, :nodes] = mask
        full[nodes:] = draft.extra.sees
        mask = full
        tokens = torch.cat([tokens, torch.zeros(batch, extra, dtype=torch.long)], dim=1)
        token_mask = torch.cat([token_mask, torch.ones(batch, extra, dtype=torch.bool)], dim=1)
        embeds = draft.extra.embeds.new_zeros(batch, width, size)
        embeds[:, nodes:] = draft.extra.embeds
        given = (torch.arange(width) >= nodes)[None].expand(batch, width)
        options = {"embeds": embeds, "embeds_mask": given}
        if draft.extra.sees_reserved:
            options["sees_reserved"] = given
    return tokens, {"token_mask": token_mask, "tree_mask": mask, **options}


def keep_settled(target: Engine, draft: Draft, result: Verification | TreeVerification, width: int) -> None:
    """Drop from the target's cache what the verification did not keep of the last block (``width``
    positions), extra positions included: a count rolled back for chains, the kept path for trees."""
    lengths = draft.row_lengths()
    if draft.parents is None and draft.extra is None:
        if draft.gamma:  # a plain step keeps its one token
            target.rollback(lengths - result.num_accepted)
        return
    keep = torch.zeros(len(lengths), width, dtype=torch.bool)
    keep[:, 0] = True
    for row, nodes in enumerate(accepted_nodes(draft, result)):
        keep[row, [1 + i for i in nodes]] = True
    target.keep(keep)


def accepted_nodes(draft: Draft, result: Verification | TreeVerification) -> list[list[int]]:
    """The draft positions each row kept, in order."""
    counts = result.num_accepted.tolist()
    if isinstance(result, TreeVerification):
        return [result.path[row, :n].tolist() for row, n in enumerate(counts)]
    return [list(range(n)) for n in counts]


def provenance(length: int, accepted: int) -> list[str]:
    """Where each token a row emitted in one step came from: its accepted draft tokens, then the
    target's token (a resampled one after a rejection, the bonus after a fully accepted draft, or a
    plain step's own)."""
    last = TARGET if length == 0 else BONUS if accepted == length else RESAMPLED
    return [ACCEPTED] * accepted + [last]
