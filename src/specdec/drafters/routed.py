"""Several drafters behind one: each row is drafted by the drafter its request chose.

A server holds one batch and one loop, but its requests want different things: prompt lookup for a
summary or an edit, a trained draft for new text, no speculation at all for a latency-critical call.
:class:`RoutedDrafter` gives every row to one of its drafters, which sees only its own rows as a batch
of their own (in batch order, so admission and release keep their meaning), and merges their guesses
into one ragged chain: each row verifies its own drafter's tokens, with that drafter's p (one-hot
where a drafter guesses without a distribution), so verification is the usual exact rule per row.
Only chain drafters that keep their own state qualify: trees and BiTA's extra positions shape the
whole block, and an early exit runs on the target's own cache rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.engine import ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.sampling import Draws, RowSampling, Sampling


def check_routable(name: str, drafter: Drafter) -> None:
    if drafter.proposes_trees or drafter.block_positions or drafter.reserved_slots:
        raise InvalidArgumentError(
            f"drafter {name!r} shapes the whole verify block; routing needs chain drafters"
        )
    if type(drafter).attach is not Drafter.attach:
        raise InvalidArgumentError(
            f"drafter {name!r} runs on the target's own cache; it cannot serve some rows"
        )


def rows_output(
    out: ExtendOutput | None, rows: list[int], layers: Sequence[int], width: int
) -> ExtendOutput | None:
    """``out`` for batch positions ``rows`` as a batch of their own: hidden states cut to ``layers`` and to
    the last ``width`` columns (prefills are left-padded to the longest prompt of the whole batch)."""
    if out is None:
        return None
    index = torch.tensor(rows, dtype=torch.long)
    hidden = {h: out.hidden_states[h][index.to(out.hidden_states[h].device)] for h in layers}
    hidden = {h: s[:, s.shape[1] - width :] for h, s in hidden.items()}
    return ExtendOutput(out.logits[index.to(out.logits.device)], hidden)


def merge_drafts(parts: Sequence[tuple[list[int], Draft]], batch: int) -> Draft:
    """One ragged chain from each group of rows' own draft (rows nobody drafted for get none)."""
    width = max((d.gamma for _, d in parts), default=0)
    tokens = torch.zeros(batch, width, dtype=torch.long)
    lengths = torch.zeros(batch, dtype=torch.long)
    distributions = [d.probs for _, d in parts if d.probs is not None]
    probs = None
    if distributions:
        like = distributions[0]
        probs = like.new_zeros(batch, width, like.shape[-1])
    for rows, draft in parts:
        index = torch.tensor(rows, dtype=torch.long)
        tokens[index, : draft.gamma] = draft.tokens
        lengths[index] = draft.row_lengths()
        if probs is None or not draft.gamma:
            continue
        if draft.probs is not None:
            probs[index.to(probs.device), : draft.gamma] = draft.probs.to(probs.dtype)
        else:  # guessed without a distribution: p is one-hot at the guess
            one_hot = torch.zeros(
                len(rows), draft.gamma, probs.shape[-1], dtype=probs.dtype, device=probs.device
            )
            probs[index.to(probs.device), : draft.gamma] = one_hot.scatter_(
                -1, draft.tokens[..., None].to(probs.device), 1
            )
    return Draft(tokens, probs, lengths)


class RoutedDrafter(Drafter):
    """``drafters`` by name; rows begin or join with the name their request chose (``default`` when
    none). A drafter is started on its first rows and dropped when its last row leaves."""

    def __init__(self, drafters: Mapping[str, Drafter], default: str | None = None):
        if not drafters:
            raise InvalidArgumentError("routing needs at least one drafter")
        for name, drafter in drafters.items():
            check_routable(name, drafter)
        self.drafters = dict(drafters)
        self.default = next(iter(self.drafters)) if default is None else default
        self.check_route(self.default)
        self.name = "routed:" + ",".join(self.drafters)
        self.has_confidence = any(d.has_confidence for d in self.drafters.values())
        self.target_hidden_layers = tuple(
            sorted({h for d in self.drafters.values() for h in d.target_hidden_layers})
        )
        self.routes: list[str] = []  # each batch position's drafter
        self._done_calls = 0  # forwards of drafters dropped since begin

    def check_route(self, route: str | None) -> str:
        """The drafter name ``route`` stands for (None: the default); a clear error for an unknown one."""
        route = self.default if route is None else route
        if route not in self.drafters:
            raise InvalidArgumentError(
                f"no drafter {route!r} here; this one drafts with {sorted(self.drafters)}"
            )
        return route

    @property
    def draft_calls(self) -> int:
        live = {name for name in self.routes}
        return self._done_calls + sum(self.drafters[name].draft_calls for name in live)

    @property
    def context_size(self) -> int | None:
        sizes = [d.context_size for d in self.drafters.values() if d.context_size is not None]
        return min(sizes) if sizes else None

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        for drafter in self.drafters.values():
            drafter.validate(target, tokenizer)

    def members(self, name: str, routes: Sequence[str] | None = None) -> list[int]:
        return [row for row, route in enumerate(self.routes if routes is None else routes) if route == name]

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None, routes=None) -> None:
        self.routes, self._done_calls = [], 0
        self._join(prompts, prefill, routes)

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None, routes=None) -> None:
        self._join(prompts, prefill, routes)

    def _join(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None, routes) -> None:
        """Rows for ``prompts`` at the end of the batch, each begun in (or admitted to) its drafter."""
        routes = [self.check_route(r) for r in (routes or [None] * len(prompts))]
        if len(routes) != len(prompts):
            raise InvalidArgumentError(f"{len(prompts)} prompts but {len(routes)} routes")
        for name in dict.fromkeys(routes):
            rows = self.members(name, routes)
            drafter, mine = self.drafters[name], [prompts[r] for r in rows]
            given = rows_output(prefill, rows, drafter.target_hidden_layers, max(len(p) for p in mine) - 1)
            if not any(len(p) > 1 for p in mine):
                given = None
            if self.members(name):
                drafter.admit(mine, given)
            else:
                drafter.begin(mine, given)
        self.routes += routes

    def propose(
        self, gamma: int, sampling: Sampling, draws: Draws, *, min_confidence: float | torch.Tensor = 0.0
    ) -> Draft:
        parts = []
        for name in dict.fromkeys(self.routes):
            rows = self.members(name)
            index = torch.tensor(rows, dtype=torch.long)
            mine = sampling.select(index) if isinstance(sampling, RowSampling) else sampling
            floor = min_confidence[index] if torch.is_tensor(min_confidence) else min_confidence  # α_FB
            draft = self.drafters[name].propose(gamma, mine, draws.select(index), min_confidence=floor)
            parts.append((rows, draft))
        return merge_drafts(parts, len(self.routes))

    def update(self, feedback: Feedback) -> None:
        for name in dict.fromkeys(self.routes):
            rows = self.members(name)
            index = torch.tensor(rows, dtype=torch.long)
            drafter = self.drafters[name]
            target = rows_output(
                feedback.target, rows, drafter.target_hidden_layers, feedback.target.logits.shape[1]
            )
            drafter.update(Feedback(feedback.num_accepted[index], feedback.next_token[index], target))

    def select_rows(self, rows: torch.Tensor) -> None:
        kept = rows.tolist()
        for name in dict.fromkeys(self.routes):
            mine = self.members(name)
            local = torch.tensor([mine.index(r) for r in kept if self.routes[r] == name], dtype=torch.long)
            if len(local):
                self.drafters[name].select_rows(local)
            else:  # its last row left: it begins afresh when a row chooses it again
                self._done_calls += self.drafters[name].draft_calls
        self.routes = [self.routes[r] for r in kept]


def route_options(drafter: Drafter, route: str | None, count: int) -> dict:
    """``begin`` / ``admit`` options giving ``count`` new rows to the drafter their request chose."""
    if route is None:
        return {}
    if not isinstance(drafter, RoutedDrafter):
        name = getattr(drafter, "name", type(drafter).__name__)
        raise InvalidArgumentError(
            f"a request chose drafter {route!r}, but this loop drafts with {name!r} alone"
        )
    return {"routes": [drafter.check_route(route)] * count}
