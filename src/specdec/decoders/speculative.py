"""Speculative sampling (Chen et al. 2023): draft γ tokens, score γ+1 positions in one target call,
keep the longest accepted prefix plus one resampled or bonus token. Lossless: greedy output is
the target's greedy output, sampled output follows the target's distribution exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from specdec.decoders.common import DecodeResult, capacity_for, context_full, finish, next_tokens
from specdec.decoders.gamma import GammaPolicy, StepResult
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import Rows, StopCriteria, StreamCallback
from specdec.drafters.base import Draft, Drafter
from specdec.engine import Engine
from specdec.sampling import SamplingConfig, Verification, greedy_tokens, greedy_verify, logits_to_probs
from specdec.sampling import rejection_sample as _rejection_sample


def verify(draft: Draft, logits: torch.Tensor, sampling: SamplingConfig, generator) -> Verification:
    """Accept/resample the draft against the target logits ``[B, γ+1, V]``."""
    if draft.gamma == 0:  # nothing proposed: a plain step
        accepted = torch.zeros(logits.shape[0], dtype=torch.long)
        return Verification(accepted, next_tokens(logits[:, 0], sampling, generator).cpu())
    lengths = draft.row_lengths()
    if sampling.greedy:
        return greedy_verify(draft.tokens, greedy_tokens(logits).cpu(), draft_lengths=lengths)
    q = logits_to_probs(logits, sampling).cpu()
    p = draft.probs
    if p is None:  # a deterministic proposal is a one-hot p
        p = F.one_hot(draft.tokens, q.shape[-1]).to(q.dtype)
    return _rejection_sample(draft.tokens, p.cpu(), q, generator, draft_lengths=lengths)


def trim(draft: Draft) -> Draft:
    """Drop trailing positions no row proposed anything for."""
    width = int(draft.row_lengths().max()) if draft.tokens.shape[0] else 0
    if width == draft.gamma:
        return draft
    probs = None if draft.probs is None else draft.probs[:, :width]
    return Draft(draft.tokens[:, :width], probs, draft.lengths)


VerifyRule = Callable[[Draft, torch.Tensor], Verification]


def speculative_generate(
    target: Engine,
    drafter: Drafter,
    prompts: Sequence[Sequence[int]],
    *,
    sampling: SamplingConfig,
    stop: StopCriteria,
    gamma: GammaPolicy,
    generator: torch.Generator | None = None,
    callback: StreamCallback | None = None,
) -> DecodeResult:
    def rule(draft: Draft, logits: torch.Tensor) -> Verification:
        return verify(draft, logits, sampling, generator)

    return draft_verify_loop(
        target,
        drafter,
        prompts,
        rule,
        sampling=sampling,
        stop=stop,
        gamma=gamma,
        generator=generator,
        callback=callback,
    )


def draft_verify_loop(
    target: Engine,
    drafter: Drafter,
    prompts: Sequence[Sequence[int]],
    rule: VerifyRule,
    *,
    sampling: SamplingConfig,
    stop: StopCriteria,
    gamma: GammaPolicy,
    min_confidence: float = 0.0,
    generator: torch.Generator | None = None,
    callback: StreamCallback | None = None,
) -> DecodeResult:
    """Draft, score the block in one target call, keep what ``rule`` accepts, roll back the rest.

    Shared by every draft-then-verify method; they differ only in the rule (modified rejection
    sampling for SpS, BiLD's rollback threshold) and in when the drafter stops (``min_confidence``).
    """
    start = time.perf_counter()
    stats, rows = GenerationStats(), Rows(len(prompts), stop, callback)
    capacity = capacity_for(prompts, stop.max_new_tokens, block=gamma.max_gamma + 1)
    target.reset(len(prompts), capacity)
    with stats.timed("prefill_time", target.device):
        if any(len(p) > 1 for p in prompts):
            target.prefill([p[:-1] for p in prompts])
        drafter.begin(prompts, capacity)
    pending = torch.tensor([p[-1] for p in prompts], dtype=torch.long)
    while rows.active:
        # γ never exceeds what the longest-running row can still use, nor the context window.
        g = max(1, min(gamma.next_gamma(), max(rows.remaining()) - 1))
        done = context_full(target, rows, block=g + 1)
        if done:
            rows.finish(done, "context")
        else:
            spent = stats.draft_time, stats.target_time
            with stats.timed("draft_time", target.device):
                draft = drafter.propose(g, sampling, generator, min_confidence=min_confidence)
            draft = trim(draft)  # short or stopped drafts: don't verify padding
            lengths = draft.row_lengths()
            block = torch.cat([pending[:, None], draft.tokens], dim=1)
            block_mask = torch.arange(draft.gamma + 1)[None, :] <= lengths[:, None]
            with stats.timed("target_time", target.device):
                logits = target.extend(block, token_mask=block_mask).logits
            result = rule(draft, logits)
            accepted = result.num_accepted
            target.rollback(lengths - accepted)
            drafter.update(accepted, result.next_tokens)

            stats.target_calls += 1
            stats.row_steps += len(rows.active)
            stats.proposed_tokens += int(lengths.sum())
            stats.accepted_tokens += int(accepted.sum())
            stats.short_drafts += int((lengths < g).sum())
            stats.rejections += int((accepted < lengths).sum())
            stats.accepted_histogram.update(accepted.tolist())
            draft_time, verify_time = stats.draft_time - spent[0], stats.target_time - spent[1]
            gamma.update(
                StepResult(draft.gamma, accepted.tolist(), lengths.tolist(), verify_time, draft_time)
            )
            new = [
                [*draft.tokens[row, :n].tolist(), t]
                for row, (n, t) in enumerate(zip(accepted.tolist(), result.next_tokens.tolist(), strict=True))
            ]
            pending = result.next_tokens
            done = rows.emit(new, accepted.tolist())
        if done:
            keep = rows.drop(done)
            if keep is None:
                break
            target.select_rows(keep)
            drafter.select_rows(keep)
            pending = pending[keep]
    stats.draft_calls = drafter.draft_calls
    stats.total_time = time.perf_counter() - start
    return finish(rows, stats)
