"""The one draft-then-verify loop every speculative method runs, with its own verify rule.

Each step: the drafter guesses γ tokens per row (a chain, or a tree of candidates), the target scores
[pending token, draft] in one pass (with any positions the drafter adds for itself, e.g. BiTA's mask
tokens), the rule decides which draft tokens each row keeps and which token follows them, both
caches drop the rest, and the drafter hears what was settled (with the target pass's logits
and requested hidden states). γ comes from a policy, cut near a row's token budget and near the
end of the context window, down to 0 (a plain target step), so every position of the window is used.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from specdec.decoders.common import DecodeResult, Request, context_full, finish
from specdec.decoders.gamma import GammaPolicy, StepResult
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import Rows
from specdec.drafters import Draft, Drafter, Feedback
from specdec.engine import Engine
from specdec.sampling import Draws, TreeVerification, Verification, chain_parents, tree_attention

# rule(draft, target logits at [pending, draft tokens] [B, γ+1, V], draws) -> what each row keeps
# (a count for chains, a path for trees) and what follows
VerifyRule = Callable[[Draft, torch.Tensor, Draws], Verification | TreeVerification]


def usable_lengths(rows: Rows, target: Engine) -> torch.Tensor:
    """``[B]`` draft tokens each row can use: what its token budget and the target's context window
    leave after the pending token (each row's own, so no other row changes what it verifies)."""
    usable = torch.tensor(rows.remaining()) - 1
    room = target.room()
    if room is not None:  # the pending token and the draft tokens need 1 + length positions
        usable = torch.minimum(usable, room - 1)
    return usable.clamp(min=0)


def draft_length(policy: GammaPolicy, usable: torch.Tensor, target: Engine, drafter: Drafter) -> int:
    """γ for this step: the policy's choice (a tree drafter's own block size), cut to what the row
    that can use the most can use, and to the context windows of target and drafter for the row
    nearest its end (a drafter may run on the target's engine: an early exit) (0: a plain step)."""
    wanted = drafter.block_positions or policy.next_gamma()
    gamma = min(wanted, int(usable.max()))
    room = target.room()
    if room is not None:
        gamma = min(gamma, int(room.min()) - 1)
    if drafter.context_size is not None:  # a drafter reads up to the γ-th position after the pending one
        gamma = min(gamma, drafter.context_size - int(target.num_tokens.max()))
    return max(gamma, 0)


def cap(draft: Draft, usable: torch.Tensor) -> Draft:
    """A chain cut to each row's usable length, then to the longest row: a row verifies only the draft
    tokens it can emit, so what it emits never depends on the other rows' budgets."""
    lengths = torch.minimum(draft.row_lengths(), usable)
    width = int(lengths.max()) if len(lengths) else 0
    probs = None if draft.probs is None else draft.probs[:, :width]
    return Draft(draft.tokens[:, :width], probs, lengths)


def verify_block(pending: torch.Tensor, draft: Draft) -> tuple[torch.Tensor, dict]:
    """The target's block for a draft, [pending token, draft tokens, the drafter's extra positions], and
    the :meth:`~specdec.engine.Engine.extend` options that shape it (padding, tree mask, embeddings)."""
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


def draft_verify_loop(
    target: Engine,
    drafter: Drafter,
    request: Request,
    rule: VerifyRule,
    *,
    policy: GammaPolicy,
    min_confidence: float = 0.0,
) -> DecodeResult:
    """Draft, score the block in one target call, keep what ``rule`` accepts, roll back the rest.

    Shared by every draft-then-verify method; they differ only in the rule (SpS's coupled match or
    modified rejection sampling, BiLD's rollback threshold) and in when the drafter stops
    (``min_confidence``, BiLD's fallback threshold).
    """
    start = time.perf_counter()
    stats, rows = GenerationStats(), request.rows()
    with stats.timed("prefill_time", target.device):
        prefill = target.start(
            request.prompts,
            extra_slots=request.first_growth(block=policy.max_gamma + 1),
            hidden_layers=drafter.target_hidden_layers,
            reserved=drafter.reserved_slots,
        )
        drafter.begin(request.prompts, prefill)
    while rows.active:
        done = context_full(target)
        if done:
            rows.finish(done, "context")
        else:
            usable, draws = usable_lengths(rows, target), rows.draws()
            gamma = draft_length(policy, usable, target, drafter)
            spent = stats.draft_time, stats.target_time
            with stats.timed("draft_time", target.device):
                draft = drafter.propose(gamma, request.sampling, draws, min_confidence=min_confidence)
            if draft.parents is None and draft.extra is None:
                draft = cap(draft, usable)  # short, stopped or over-budget drafts: don't verify padding
            lengths = draft.row_lengths()
            block, options = verify_block(rows.pending, draft)
            with stats.timed("target_time", target.device):
                out = target.extend(block, hidden_layers=drafter.target_hidden_layers, **options)
            result = rule(draft, out.logits[:, : draft.gamma + 1], draws)
            accepted = result.num_accepted
            keep_settled(target, draft, result, block.shape[1])
            path = result.path if isinstance(result, TreeVerification) else None
            drafter.update(Feedback(accepted, result.next_token, out, path))

            stats.target_calls += 1
            stats.row_steps += len(rows.active)
            stats.proposed_tokens += int(lengths.sum())
            stats.accepted_tokens += int(accepted.sum())
            stats.short_drafts += int((lengths < gamma).sum())
            stats.rejections += int((accepted < lengths).sum())
            stats.accepted_histogram.update(accepted.tolist())
            if gamma and not drafter.block_positions:  # a forced plain step says nothing about drafting
                draft_time, verify_time = stats.draft_time - spent[0], stats.target_time - spent[1]
                chain = draft.parents is None  # a tree is scored by its depth, the γ it was drafted at
                depth, depths = (draft.gamma, lengths) if chain else (gamma, torch.full_like(lengths, gamma))
                policy.update(StepResult(depth, accepted.tolist(), depths.tolist(), verify_time, draft_time))
            settled = zip(accepted_nodes(draft, result), result.next_token.tolist(), strict=True)
            new = [[*draft.tokens[row, nodes].tolist(), t] for row, (nodes, t) in enumerate(settled)]
            done = rows.emit(new, accepted.tolist())
        if done:
            rows.drop(done, target, drafter)
    stats.draft_calls = drafter.draft_calls
    stats.total_time = time.perf_counter() - start
    return finish(rows, stats)
