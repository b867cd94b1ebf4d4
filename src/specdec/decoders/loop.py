"""The one draft-then-verify loop every speculative method runs, with its own verify rule.

Each step: the drafter guesses γ tokens per row (a chain, or a tree of candidates), the target scores
[pending token, draft] in one pass (with any positions the drafter adds for itself, e.g. BiTA's mask
tokens), the rule decides which draft tokens each row keeps and which token follows them, both
caches drop the rest, and the drafter hears what was settled (with the target pass's logits
and requested hidden states). γ comes from a policy, cut near a row's token budget and near the
end of the context window, down to 0 (a plain target step), so every position of the window is used.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from specdec.decoders.blocks import accepted_nodes, cap, keep_settled, provenance, verify_block
from specdec.decoders.common import DecodeResult, Request, context_full, finish, target_choice
from specdec.decoders.lengths import check_draft_cap, draft_length, usable_lengths
from specdec.decoders.policy import GammaPolicy, StepResult
from specdec.decoders.siblings import chain_outcome
from specdec.decoders.stats import GenerationStats
from specdec.decoders.stopping import GREEDY, StopCriteria
from specdec.drafters import Draft, Drafter, Feedback
from specdec.drafters.routed import route_options
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.sampling import (
    Draws,
    Sampling,
    TreeVerification,
    Verification,
)

# rule(draft, target logits at [pending, draft tokens] [B, γ+1, V], the rows' sampling, draws) -> what
# each row keeps (a count for chains, a path for trees) and what follows
VerifyRule = Callable[[Draft, torch.Tensor, Sampling, Draws], Verification | TreeVerification]


@dataclass
class StepOutput:
    """What one request got from one step: new tokens (cut at its stop), where each came from, and
    why it finished (None while it runs)."""

    row: int  # the request's row: its index in the batch it started with, then in admission order
    tokens: list[int]
    provenance: list[str]
    finish_reason: str | None
    drafted: int = 0  # draft tokens this step verified for the request (0: a plain step for it)


class DraftVerifyLoop:
    """The one decoding loop, step by step: draft, score the block in one target call, keep what
    ``rule`` accepts, roll back the rest. Requests join (:meth:`admit`) and leave (:meth:`abort`, or
    their stop) between steps; :meth:`step` returns what each running request got.

    Every method runs on it and differs only in the rule (SpS's coupled match or modified rejection
    sampling, BiLD's rollback threshold), in when the drafter stops (BiLD's fallback threshold: the
    method's ``thresholds`` (α_FB, α_RB), or a request's own, see :meth:`row_thresholds`) and in the γ
    ``policy`` (None: plain decoding, no drafts).
    """

    def __init__(
        self,
        target: Engine,
        drafter: Drafter,
        request: Request,
        rule: VerifyRule,
        *,
        policy: GammaPolicy | None,
        thresholds: tuple[float, float] | None = None,
    ):
        self.target, self.drafter, self.rule, self.policy = target, drafter, rule, policy
        # one policy per drafting source (Drafter.next_source): the first source's is the one given, each
        # further source's a copy of it as this loop got it
        self._unused = copy.deepcopy(policy)
        self.policies: dict[str | None, GammaPolicy] = {}
        self._step_policy = policy  # the policy of the source drafting the current step
        self.thresholds = thresholds
        check_draft_cap(request.draft_cap, drafter)
        self._check_thresholds(request.thresholds)
        routing = route_options(drafter, request.route, len(request.prompts))
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
            drafter.begin(request.prompts, prefill, **routing)

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
        draft_cap: int | None = None,
        route: str | None = None,
        thresholds: tuple[float, float] | None = None,
    ) -> list[int]:
        """Add requests (token ids, noise keys, stop criteria, sampling) to the running batch; their rows.
        ``draft_cap``: the most draft tokens they verify per step (0: speculation off for them; chains
        only — a tree drafter's block is one shape for every row); ``route``: which drafter of a
        :class:`~specdec.drafters.routed.RoutedDrafter` drafts for them; ``thresholds``: their own BiLD
        (α_FB, α_RB)."""
        check_draft_cap(draft_cap, self.drafter)
        self._check_thresholds(thresholds)
        routing = route_options(self.drafter, route, len(prompts))
        with self.stats.timed("prefill_time", self.target.device):
            prefill = self.target.admit(prompts, hidden_layers=self.drafter.target_hidden_layers)
            self.drafter.admit(prompts, prefill, **routing)
        return self.rows.admit(prompts, keys, stop, sampling, draft_cap, thresholds)

    def row_thresholds(self, which: int) -> float | torch.Tensor:
        """BiLD's α_FB (``which`` 0) or α_RB (1) for the active rows: the method's, or float64 ``[B]``
        where a request brought its own (0 and inf, never stop and never roll back, without BiLD)."""
        default = (0.0, math.inf)[which] if self.thresholds is None else self.thresholds[which]
        own = [self.rows.thresholds[row] for row in self.rows.active]
        if all(t is None for t in own):
            return default
        return torch.tensor([default if t is None else t[which] for t in own], dtype=torch.float64)

    def _check_thresholds(self, thresholds: tuple[float, float] | None) -> None:
        if thresholds is None:
            return
        if self.thresholds is None:
            raise InvalidArgumentError("BiLD thresholds were given, but this loop does not decode with BiLD")
        fallback, rollback = thresholds
        if not 0 <= fallback <= 1 or not rollback >= 0:  # NaN fails too
            raise InvalidArgumentError(
                f"BiLD thresholds: α_FB must be in [0, 1] and α_RB >= 0, got {fallback!r}, {rollback!r}"
            )

    def abort(self, rows: Sequence[int]) -> None:
        """Stop these requests now; their slots are freed."""
        doomed = set(rows)
        positions = [pos for pos, row in enumerate(self.rows.active) if row in doomed]
        self.rows.finish(positions, "abort")
        self.rows.drop(positions, self.target, self.drafter)

    def step(self) -> list[StepOutput]:
        """One target call for every running request (rows at the end of the context window finish
        instead)."""
        rows = self.rows
        full = context_full(self.target)
        if full:
            out = [StepOutput(rows.active[pos], [], [], "context") for pos in full]
            rows.finish(full, "context")
            rows.drop(full, self.target, self.drafter)
            return out
        draws, sampling = rows.draws(), rows.sampling()
        spent = self.stats.draft_time
        gamma, draft, tree = self._propose(sampling, draws)
        began, upkeep = time.perf_counter(), self.target.upkeep_seconds
        result = self._verify(draft, sampling, draws)
        verify_time = time.perf_counter() - began - (self.target.upkeep_seconds - upkeep)  # not the cache's
        self._learn(gamma, draft, result, (self.stats.draft_time - spent, verify_time), tree)
        return self._emit(draft, result)

    def _propose(self, sampling: Sampling, draws: Draws) -> tuple[int, Draft, Draft | None]:
        """γ for this step, the draft it verifies (each row's cut to what it can use) and the chain-first
        tree that draft came from (None: not one), whose chain alone is verified where the γ policy
        says its siblings do not pay."""
        rows, target = self.rows, self.target
        usable = None if self.policy is None else usable_lengths(rows, target)  # None: plain decoding
        gamma = 0 if usable is None else draft_length(self._source_policy(), usable, target, self.drafter)
        with self.stats.timed("draft_time", target.device):
            draft = self.drafter.propose(gamma, sampling, draws, min_confidence=self.row_thresholds(0))
        tree = draft if draft.chain_first else None
        if tree is not None and not self._step_policy.siblings:
            draft = tree.chain()
        if draft.gamma and draft.extra is None:
            draft = cap(draft, usable)  # short, stopped or over-budget drafts: don't verify padding
        return gamma, draft, tree

    def _source_policy(self) -> GammaPolicy:
        """The γ policy of the source that drafts this step (see ``policies``)."""
        source = self.drafter.next_source()
        if source not in self.policies:
            self.policies[source] = self.policy if not self.policies else copy.deepcopy(self._unused)
        self._step_policy = self.policies[source]
        return self._step_policy

    def _verify(self, draft: Draft, sampling: Sampling, draws: Draws) -> Verification | TreeVerification:
        """The target's pass over [pending token, draft], the rule's verdict, both caches brought in
        line with it."""
        target, drafter = self.target, self.drafter
        block, options = verify_block(self.rows.pending, draft)
        with self.stats.timed("target_time", target.device):
            out = target.extend(block, hidden_layers=drafter.target_hidden_layers, **options)
        if draft.gamma or draft.extra is not None:
            result = self.rule(draft, out.logits[:, : draft.gamma + 1], sampling, draws)
        else:  # a plain step, whatever the rule: the target's own choice
            chosen = target_choice(out.logits[:, 0], sampling, draws, 0)
            result = Verification(torch.zeros_like(chosen), chosen)
        keep_settled(target, draft, result, block.shape[1])
        path = result.path if isinstance(result, TreeVerification) else None
        drafter.update(Feedback(result.num_accepted, result.next_token, out, path))
        return result

    def _learn(
        self, gamma: int, draft: Draft, result, times: tuple[float, float], tree: Draft | None
    ) -> None:
        """Count the step, and tell the γ policy what it asked for, what that cost (``times``: drafting,
        verifying) and what it brought (plain steps too: they time a plain call at this batch size)."""
        lengths, accepted = draft.row_lengths(), result.num_accepted
        self.stats.count_step(gamma, lengths, accepted)
        if self.policy is None or self.drafter.block_positions:  # plain decoding; a tree's own shape
            return
        chain = draft.parents is None  # a tree is scored by its depth, the γ it was drafted at
        depths = torch.full_like(lengths, gamma)
        if not chain and draft.depth_caps is not None:  # rows capped below it could keep fewer
            depths = depths.clamp(max=draft.depth_caps)
        depth, drafted = (draft.gamma, lengths.tolist()) if chain else (gamma, depths.tolist())
        outcome = chain_outcome(tree, draft, result, drafted)  # a chain-first tree's chain, and rescues
        proposed = tree if tree is not None else draft  # the drafter's whole proposal
        width = proposed.gamma // max(1, gamma) if proposed.parents is not None else 1
        draft_time, verify_time = times
        self._step_policy.update(
            StepResult(
                depth,
                outcome.kept,
                drafted,
                verify_time,
                draft_time,
                len(drafted),
                asked=gamma,
                width=width,
                nodes=draft.gamma,
                rescued=outcome.rescued,
            )
        )

    def _emit(self, draft: Draft, result: Verification | TreeVerification) -> list[StepOutput]:
        """Each row's settled tokens to its request (cut at its stop); finished rows leave."""
        rows, accepted = self.rows, result.num_accepted.tolist()
        settled = zip(accepted_nodes(draft, result), result.next_token.tolist(), strict=True)
        new = [
            [*draft.tokens[row, nodes].tolist(), t] if nodes else [t]
            for row, (nodes, t) in enumerate(settled)
        ]
        lengths = draft.row_lengths().tolist()
        kinds = [provenance(n, a) for n, a in zip(lengths, accepted, strict=True)]
        running, starts = list(rows.active), [len(rows.tokens[row]) for row in rows.active]
        done = rows.emit(new, accepted)
        outputs = []
        for row, start, kind, drafted in zip(running, starts, kinds, lengths, strict=True):
            tokens = rows.tokens[row][start:]
            outputs.append(StepOutput(row, tokens, kind[: len(tokens)], rows.finish_reasons[row], drafted))
        if done:
            rows.drop(done, self.target, self.drafter)
        return outputs

    def result(self) -> DecodeResult:
        """Every request's tokens so far, with the call's statistics."""
        self.stats.draft_calls = self.drafter.draft_calls
        self.stats.total_time = time.perf_counter() - self._start
        return finish(self.rows, self.stats)
