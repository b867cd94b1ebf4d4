"""How many draft tokens a step may verify: what each row's token budget, its request's draft cap and the
context windows of target and drafter leave, and the γ a step runs at (the policy's choice cut to
that), so that every position of the window is used and no row changes what another verifies.
"""

from __future__ import annotations

import torch

from specdec.decoders.policy import GammaPolicy
from specdec.decoders.stopping import Rows
from specdec.drafters import Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError

NO_LIMIT = 2**31  # more draft tokens than any block holds


def usable_lengths(rows: Rows, target: Engine) -> torch.Tensor:
    """``[B]`` draft tokens each row can use: what its token budget and the target's context window
    leave after the pending token (each row's own, so no other row changes what it verifies)."""
    usable = torch.tensor([min(r, NO_LIMIT) for r in rows.remaining()]) - 1  # budgets may exceed int64
    caps = [rows.draft_caps[row] for row in rows.active]
    if any(c is not None for c in caps):  # requests that asked for shorter drafts, or none
        usable = torch.minimum(usable, torch.tensor([NO_LIMIT if c is None else c for c in caps]))
    room = target.room()
    if room is not None:  # the pending token and the draft tokens need 1 + length positions
        usable = torch.minimum(usable, room - 1)
    return usable.clamp(min=0)


def check_draft_cap(draft_cap: int | None, drafter: Drafter) -> None:
    """A request's cap on its draft tokens: None, or an integer >= 0, and only with a chain drafter (a
    tree's block is verified whole)."""
    if draft_cap is None:
        return
    if isinstance(draft_cap, bool) or not isinstance(draft_cap, int) or draft_cap < 0:
        raise InvalidArgumentError(f"draft_cap must be an integer >= 0 or None, got {draft_cap!r}")
    if drafter.block_positions:
        raise InvalidArgumentError("a per-request draft cap needs a chain drafter, not a tree")


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
