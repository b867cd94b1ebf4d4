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
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch

from specdec.decoders.common import DecodeResult, Request, context_full, finish, target_choice
from specdec.decoders.gamma import GammaPolicy, StepResult
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import GREEDY, Rows, StopCriteria
from specdec.drafters import Draft, Drafter, Feedback
from specdec.engine import Engine
from specdec.sampling import (
    Draws,
    Sampling,
    TreeVerification,
    Verification,
    chain_parents,
    tree_attention,
)

# rule(draft, target logits at [pending, draft tokens] [B, γ+1, V], the rows' sampling, draws) -> what
# each row keeps (a count for chains, a path for trees) and what follows
VerifyRule = Callable[[Draft, torch.Tensor, Sampling, Draws], Verification | TreeVerification]

# Provenance of an emitted token (StepOutput.provenance)
ACCEPTED, RESAMPLED, BONUS, TARGET = "accepted", "resampled", "bonus", "target"


def usable_lengths(rows: Rows, target: Engine) -> torch.Tensor:
    """``[B]`` draft tokens each row can use: what its token budget and the target's context window
    leave after the pending token (each row's own, so no other row changes what it verifies)."""
    usable = torch.tensor(rows.remaining()) - 1
    room = target.room()
    if room is not None:  # the pending token and the draft tokens need 1 + length positions
        usable = torch.minimum(usable, room - 1)
    return usable.clamp(min=0)


def draft_length(policy: GammaPolicy | None, usable: torch.Tensor, target: Engine, drafter: Drafter) -> int:
    """γ for this step: the policy's choice (a tree drafter's own block size), cut to what the row
    that can use the most can use, and to the context windows of target and drafter for the row
    nearest its end (a drafter may run on the target's engine: an early exit) (0: a plain step)."""
    if policy is None:  # plain decoding
        return 0
    wanted = drafter.block_positions or policy.next_gamma(len(usable))
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


@dataclass
class StepOutput:
    """What one request got from one step: new tokens (cut at its stop), where each came from, and
    why it finished (None while it runs)."""

    row: int  # the request's row: its index in the batch it started with, then in admission order
    tokens: list[int]
    provenance: list[str]
    finish_reason: str | None


class DraftVerifyLoop:
    """The one decoding loop, step by step: draft, score the block in one target call, keep what
    ``rule`` accepts, roll back the rest. Requests join (:meth:`admit`) and leave (:meth:`abort`, or
    their stop) between steps; :meth:`step` returns what each running request got.

    Every method runs on it and differs only in the rule (SpS's coupled match or modified rejection
    sampling, BiLD's rollback threshold), in when the drafter stops (``min_confidence``, BiLD's
    fallback threshold) and in the γ ``policy`` (None: plain decoding, no drafts).
    """

    def __init__(
        self,
        target: Engine,
        drafter: Drafter,
        request: Request,
        rule: VerifyRule,
        *,
        policy: GammaPolicy | None,
        min_confidence: float = 0.0,
    ):
        self.target, self.drafter, self.rule, self.policy = target, drafter, rule, policy
        self.min_confidence = min_confidence
        self.stats, self.rows = GenerationStats(), request.rows()
        self._start = time.perf_counter()
        block = 1 + (policy.max_gamma if policy is not None else 0)
        with self.stats.timed("prefill_time", target.device):
            prefill = target.start(
                request.prompts,
                extra_slots=request.first_growth(block=block),
                hidden_layers=drafter.target_hidden_layers,
                reserved=drafter.reserved_slots,
            )
            drafter.begin(request.prompts, prefill)

    @property
    def active(self) -> list[int]:
        """The rows still running."""
        return list(self.rows.active)

    def admit(
        self,
        prompts: Sequence[Sequence[int]],
        keys: Sequence[int],
        stop: StopCriteria,
        sampling: Sampling = GREEDY,
    ) -> list[int]:
        """Add requests (token ids, noise keys, stop criteria, sampling) to the running batch; their rows."""
        with self.stats.timed("prefill_time", self.target.device):
            prefill = self.target.admit(prompts, hidden_layers=self.drafter.target_hidden_layers)
            self.drafter.admit(prompts, prefill)
        return self.rows.admit(prompts, keys, stop, sampling)

    def abort(self, rows: Sequence[int]) -> None:
        """Stop these requests now; their slots are freed."""
        positions = [pos for pos, row in enumerate(self.rows.active) if row in set(rows)]
        self.rows.finish(positions, "abort")
        self.rows.drop(positions, self.target, self.drafter)

    def step(self) -> list[StepOutput]:
        """One target call for every running request (rows at the end of the context window finish
        instead)."""
        rows, target, drafter, stats = self.rows, self.target, self.drafter, self.stats
        full = context_full(target)
        if full:
            out = [StepOutput(rows.active[pos], [], [], "context") for pos in full]
            rows.finish(full, "context")
            rows.drop(full, target, drafter)
            return out
        draws, sampling = rows.draws(), rows.sampling()
        usable = None if self.policy is None else usable_lengths(rows, target)  # None: plain decoding
        gamma = 0 if usable is None else draft_length(self.policy, usable, target, drafter)
        spent = stats.draft_time, stats.target_time
        with stats.timed("draft_time", target.device):
            draft = drafter.propose(gamma, sampling, draws, min_confidence=self.min_confidence)
        if draft.gamma and draft.parents is None and draft.extra is None:
            draft = cap(draft, usable)  # short, stopped or over-budget drafts: don't verify padding
        lengths = draft.row_lengths()
        block, options = verify_block(rows.pending, draft)
        with stats.timed("target_time", target.device):
            out = target.extend(block, hidden_layers=drafter.target_hidden_layers, **options)
        if draft.gamma or draft.extra is not None:
            result = self.rule(draft, out.logits[:, : draft.gamma + 1], sampling, draws)
        else:  # a plain step, whatever the rule: the target's own choice
            chosen = target_choice(out.logits[:, 0], sampling, draws, 0)
            result = Verification(torch.zeros_like(chosen), chosen)
        accepted = result.num_accepted
        keep_settled(target, draft, result, block.shape[1])
        path = result.path if isinstance(result, TreeVerification) else None
        drafter.update(Feedback(accepted, result.next_token, out, path))
        stats.count_step(gamma, lengths, accepted)
        if gamma and not drafter.block_positions:  # a forced plain step says nothing about drafting
            draft_time, verify_time = stats.draft_time - spent[0], stats.target_time - spent[1]
            chain = draft.parents is None  # a tree is scored by its depth, the γ it was drafted at
            depth, depths = (draft.gamma, lengths) if chain else (gamma, torch.full_like(lengths, gamma))
            step = StepResult(
                depth, accepted.tolist(), depths.tolist(), verify_time, draft_time, len(lengths)
            )
            self.policy.update(step)
        settled = zip(accepted_nodes(draft, result), result.next_token.tolist(), strict=True)
        new = [
            [*draft.tokens[row, nodes].tolist(), t] if nodes else [t]
            for row, (nodes, t) in enumerate(settled)
        ]
        kinds = [provenance(n, a) for n, a in zip(lengths.tolist(), accepted.tolist(), strict=True)]
        running, starts = list(rows.active), [len(rows.tokens[row]) for row in rows.active]
        done = rows.emit(new, accepted.tolist())
        outputs = [
            StepOutput(
                row, rows.tokens[row][start:], kind[: len(rows.tokens[row]) - start], rows.finish_reasons[row]
            )
            for row, start, kind in zip(running, starts, kinds, strict=True)
        ]
        if done:
            rows.drop(done, target, drafter)
        return outputs

    def result(self) -> DecodeResult:
        """Every request's tokens so far, with the call's statistics."""
        self.stats.draft_calls = self.drafter.draft_calls
        self.stats.total_time = time.perf_counter() - self._start
        return finish(self.rows, self.stats)


class DecodingMethod(ABC):
    """A decoding method as a small object: which algorithm, with which settings.

    ``Pipeline.generate(method=...)`` takes one; every method, plain decoding included, is a thin
    wrapper around :class:`specdec.decoders.loop.DraftVerifyLoop` with its own verify rule.
    """

    name: ClassVar[str]
    #: whether the method drafts (and so needs the pipeline's drafter)
    needs_drafter: ClassVar[bool] = True
    #: whether its greedy output equals plain greedy decoding and its sampled output follows the
    #: target's distribution exactly (the conformance tests hold every lossless method to this)
    lossless: ClassVar[bool] = True

    @abstractmethod
    def loop(self, target: Engine, drafter: Drafter | None, request: Request) -> DraftVerifyLoop:
        """The step-wise loop for ``request`` on the target's engine (with ``drafter`` when
        :attr:`needs_drafter`): requests join and leave it between steps."""

    def decode(self, target: Engine, drafter: Drafter | None, request: Request) -> DecodeResult:
        """Decode ``request`` to the end: its loop stepped until every row has finished."""
        loop = self.loop(target, drafter, request)
        while loop.active:
            loop.step()
        return loop.result()
