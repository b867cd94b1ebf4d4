"""The one draft-then-verify loop every speculative method runs, with its own verify rule.

Each step: the drafter guesses γ tokens per row, the target scores [pending token, draft] in one
pass, the rule decides how many draft tokens each row keeps and which token follows them, both
caches roll back the rest, and the drafter hears what was settled (with the target pass's logits
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
from specdec.sampling import Draws, Verification

# rule(draft, target logits [B, γ+1, V], draws) -> how many draft tokens each row keeps, and what follows
VerifyRule = Callable[[Draft, torch.Tensor, Draws], Verification]


def draft_length(policy: GammaPolicy, rows: Rows, target: Engine, drafter: Drafter) -> int:
    """γ for this step: the policy's choice, cut to what the longest-running row can still use and to
    the context windows of target and drafter for the row nearest its end (0: a plain step)."""
    gamma = min(policy.next_gamma(), max(rows.remaining()) - 1)
    room = target.room()
    if room is not None:  # the pending token and γ draft tokens need γ + 1 positions
        gamma = min(gamma, int(room.min()) - 1)
    if drafter.context_size is not None:  # a drafter reads up to the γ-th position after the pending one
        gamma = min(gamma, drafter.context_size - int(target.num_tokens.max()))
    return max(gamma, 0)


def trim(draft: Draft) -> Draft:
    """Drop trailing positions no row proposed anything for."""
    width = int(draft.row_lengths().max()) if draft.tokens.shape[0] else 0
    if width == draft.gamma:
        return draft
    probs = None if draft.probs is None else draft.probs[:, :width]
    return Draft(draft.tokens[:, :width], probs, draft.lengths)


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
        )
        drafter.begin(request.prompts, prefill)
    while rows.active:
        done = context_full(target)
        if done:
            rows.finish(done, "context")
        else:
            gamma, draws = draft_length(policy, rows, target, drafter), rows.draws()
            spent = stats.draft_time, stats.target_time
            with stats.timed("draft_time", target.device):
                draft = drafter.propose(gamma, request.sampling, draws, min_confidence=min_confidence)
            draft = trim(draft)  # short or stopped drafts: don't verify padding
            lengths = draft.row_lengths()
            block = torch.cat([rows.pending[:, None], draft.tokens], dim=1)
            block_mask = torch.arange(draft.gamma + 1)[None, :] <= lengths[:, None]
            with stats.timed("target_time", target.device):
                out = target.extend(block, token_mask=block_mask, hidden_layers=drafter.target_hidden_layers)
            result = rule(draft, out.logits, draws)
            accepted = result.num_accepted
            target.rollback(lengths - accepted)
            drafter.update(Feedback(accepted, result.next_token, out))

            stats.target_calls += 1
            stats.row_steps += len(rows.active)
            stats.proposed_tokens += int(lengths.sum())
            stats.accepted_tokens += int(accepted.sum())
            stats.short_drafts += int((lengths < gamma).sum())
            stats.rejections += int((accepted < lengths).sum())
            stats.accepted_histogram.update(accepted.tolist())
            if gamma:  # a forced plain step says nothing about drafting
                draft_time, verify_time = stats.draft_time - spent[0], stats.target_time - spent[1]
                policy.update(
                    StepResult(draft.gamma, accepted.tolist(), lengths.tolist(), verify_time, draft_time)
                )
            settled = zip(accepted.tolist(), result.next_token.tolist(), strict=True)
            new = [[*draft.tokens[row, :n].tolist(), t] for row, (n, t) in enumerate(settled)]
            done = rows.emit(new, accepted.tolist())
        if done:
            rows.drop(done, target, drafter)
    stats.draft_calls = drafter.draft_calls
    stats.total_time = time.perf_counter() - start
    return finish(rows, stats)
