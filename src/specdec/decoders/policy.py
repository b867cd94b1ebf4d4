"""What a draft-length (γ) policy is: the interface every policy implements and the record of a step it
learns from, apart from the policies themselves (:mod:`specdec.decoders.gamma`) so the decoding loop
depends on the interface only."""

from __future__ import annotations

from dataclasses import dataclass

from specdec.errors import InvalidArgumentError


def check_gamma(gamma: int, name: str = "gamma") -> int:
    if not isinstance(gamma, int) or isinstance(gamma, bool) or gamma < 1:
        raise InvalidArgumentError(f"{name} (draft length γ) must be an integer >= 1, got {gamma!r}")
    return gamma


def check_decay(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise InvalidArgumentError(f"{name} must be in (0, 1), got {value!r}")
    return value


def expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens per target call, E(γ) = (1 − α^(γ+1)) / (1 − α)."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


@dataclass
class StepResult:
    gamma: int  # draft tokens verified per row (the longest proposal; the block is γ+1 wide)
    accepted: list[int]  # accepted per row
    proposed: list[int]  # proposed per row (a model-free drafter may propose fewer than γ)
    verify_time: float  # the target call and what settles it (rule, rollback, the drafter's update)
    draft_time: float
    rows: int = 1  # the batch size the step ran at
    asked: int | None = None  # the γ the policy asked for (None: ``gamma``); 0 for a plain step
    # A tree drafter's step: the nodes per draft position it proposed (k for a tree of k·γ nodes), the
    # positions after the pending token its verified block held (None: ``gamma``; a tree's whole k·γ, or γ
    # where only its chain was verified), and for a chain-first tree, per row whether a sibling rescued a
    # miss of the chain (None: no such tree; ``accepted`` then counts the chain's nodes only).
    width: int = 1
    nodes: int | None = None
    rescued: list[bool] | None = None


class GammaPolicy:
    """Chooses γ before each step and learns from what the step did."""

    #: the longest draft this policy can ask for (sizes the cache's first slack)
    max_gamma: int
    #: the γ the next step should draft
    gamma: int
    #: whether the next step verifies a chain-first tree's siblings (False: its chain alone)
    siblings: bool = True

    def next_gamma(self, batch_size: int = 1) -> int:
        """γ for a step over ``batch_size`` rows."""
        return self.gamma

    def update(self, step: StepResult) -> None:
        """Called after every step, plain ones included (``asked`` 0)."""
