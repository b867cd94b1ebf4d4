"""Draft-length (γ) policies.

The expected tokens per target call with per-token acceptance α is E(γ) = (1 − α^(γ+1)) / (1 − α),
and a step costs T_target(γ+1) + γ·T_draft. :class:`AdaptiveGamma` estimates α and both costs
online and picks the γ that maximises E(γ) / cost(γ), so it shortens drafts when verification
gets expensive or acceptance drops, where HF's +2/−1 rule only reacts to the last step; and where
no γ beats a plain step's 1 / T_target(1) it stops drafting for a while (γ = 0), since a drafter
that is bad at this prompt only slows it down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdec.errors import InvalidArgumentError


def check_gamma(gamma: int, name: str = "gamma") -> int:
    if not isinstance(gamma, int) or isinstance(gamma, bool) or gamma < 1:
        raise InvalidArgumentError(f"{name} (draft length γ) must be an integer >= 1, got {gamma!r}")
    return gamma


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
    verify_time: float
    draft_time: float
    rows: int = 1  # the batch size the step ran at


class GammaPolicy:
    """Chooses γ before each step and learns from what the step did."""

    #: the longest draft this policy can ask for (sizes the cache's first slack)
    max_gamma: int
    #: the γ the next step should draft
    gamma: int

    def next_gamma(self, batch_size: int = 1) -> int:
        """γ for a step over ``batch_size`` rows."""
        return self.gamma

    def update(self, step: StepResult) -> None:
        """Called after every step that drafted (forced plain steps at the context edge are not reported)."""


class FixedGamma(GammaPolicy):
    def __init__(self, gamma: int):
        self.gamma = self.max_gamma = check_gamma(gamma)

    def __repr__(self) -> str:
        return f"fixed(γ={self.gamma})"


class HeuristicGamma(GammaPolicy):
    """HF assisted generation's rule: +2 after a fully accepted draft, −1 otherwise."""

    def __init__(self, initial: int = 5, max_gamma: int = 16):
        self.gamma, self.max_gamma = check_gamma(initial, "initial"), check_gamma(max_gamma, "max_gamma")

    def update(self, step: StepResult) -> None:
        all_accepted = all(a == p for a, p in zip(step.accepted, step.proposed, strict=True))
        self.gamma = min(self.max_gamma, self.gamma + 2) if all_accepted else max(1, self.gamma - 1)

    def __repr__(self) -> str:
        return "heuristic(+2/-1)"


@dataclass
class _Costs:
    """What a step costs at one batch size (a bucket of them): a verify block of k tokens, T(k) = a + b·k
    by decayed least squares, a drafted token on average, and the γ they make best."""

    gamma: int
    sums: list[float] = field(default_factory=lambda: [0.0] * 5)  # decayed Σw, Σk, Σk², Σt, Σk·t
    draft_time: float = 0.0
    draft_tokens: float = 0.0
    plain_steps: int = 0

    def verify_time(self, width: int) -> float | None:
        """T(width) from the fit, or None before two distinct widths were seen."""
        w, sk, skk, st, skt = self.sums
        det = w * skk - sk * sk
        if w == 0 or det <= 1e-9 * max(1.0, w * skk):
            return None
        slope = (w * skt - sk * st) / det
        intercept = (st - slope * sk) / w
        return intercept + max(slope, 0.0) * width


def batch_bucket(rows: int) -> int:
    """Batch sizes that share cost estimates: 1, 2-3, 4-7, 8-15, ... (a verify block's cost relative
    to a plain step grows with the batch: on one row it is nearly free, on many it is not)."""
    return max(1, rows).bit_length() - 1


class AdaptiveGamma(GammaPolicy):
    """Pick γ maximising E(γ) / (T_target(γ+1) + γ·T_draft) with online estimates, per batch size.

    α is estimated with exponentially decayed counts of accepted tokens and rejections (the MLE
    of a geometric acceptance run), shared by all batch sizes; the costs are kept per batch-size
    bucket (:func:`batch_bucket`): T_target(k) = a + b·k by decayed least squares over the verify
    calls seen at that size, T_draft the decayed mean time per drafted token. So speculation switches
    itself off at the batch sizes where a wider block costs more than it brings, and back on when
    the batch shrinks. Timing feedback makes the γ schedule depend on the machine and the load; the
    text does not (greedy, and coupled sampling, emit the target's own choice at every position
    whatever γ is).
    """

    def __init__(self, initial: int = 4, max_gamma: int = 12, decay: float = 0.9, probe_every: int = 8):
        self.initial, self.max_gamma = check_gamma(initial, "initial"), check_gamma(max_gamma, "max_gamma")
        if isinstance(decay, bool) or not isinstance(decay, int | float) or not 0 < decay < 1:
            raise InvalidArgumentError(f"decay must be in (0, 1), got {decay!r}")
        self.decay = decay
        # While drafting does not pay (γ = 0), every probe_every-th step drafts one token anyway: plain
        # steps say nothing about the drafter, and the text ahead may suit it better (a formula, a copy).
        self.probe_every = check_gamma(probe_every, "probe_every")
        self.accepted, self.rejected = 4.0, 1.0  # prior: α ≈ 0.8 until evidence arrives
        self._costs: dict[int, _Costs] = {}
        self._last = self._at(1)

    def _at(self, rows: int) -> _Costs:
        return self._costs.setdefault(batch_bucket(rows), _Costs(self.initial))

    @property
    def gamma(self) -> int:
        """The γ chosen at the batch size of the last step reported."""
        return self._last.gamma

    def next_gamma(self, batch_size: int = 1) -> int:
        costs = self._at(batch_size)
        if costs.gamma:
            return costs.gamma
        costs.plain_steps += 1
        return 1 if costs.plain_steps % self.probe_every == 0 else 0

    @property
    def alpha(self) -> float:
        return self.accepted / (self.accepted + self.rejected)

    def verify_time(self, width: int) -> float | None:
        """T_target(width) at the batch size of the last step reported (None before two widths)."""
        return self._last.verify_time(width)

    def update(self, step: StepResult) -> None:
        d, costs = self.decay, self._at(step.rows)
        rows = max(1, len(step.accepted))
        self.accepted = d * self.accepted + sum(step.accepted) / rows
        rejections = sum(a < p for a, p in zip(step.accepted, step.proposed, strict=True))
        self.rejected = d * self.rejected + rejections / rows
        if step.gamma:
            costs.draft_time = d * costs.draft_time + step.draft_time
            costs.draft_tokens = d * costs.draft_tokens + step.gamma
        k, t = step.gamma + 1, step.verify_time
        costs.sums = [d * s + v for s, v in zip(costs.sums, (1.0, k, k * k, t, k * t), strict=True)]
        costs.gamma = self._best_gamma(costs, step.gamma)
        self._last = costs

    def _best_gamma(self, costs: _Costs, last: int) -> int:
        t_draft = costs.draft_time / costs.draft_tokens if costs.draft_tokens else 0.0
        if costs.verify_time(1) is None:
            # Explore so the verify-cost fit sees more than one block width.
            return max(1, min(self.max_gamma, last + 1 if last < 3 else last - 1))
        scores = {
            g: expected_tokens(self.alpha, g) / max(costs.verify_time(g + 1) + g * t_draft, 1e-9)
            for g in range(1, self.max_gamma + 1)
        }
        best = max(scores, key=scores.get)
        plain = 1.0 / max(costs.verify_time(1), 1e-9)  # one token per one-token call
        return best if scores[best] > plain else 0

    def __repr__(self) -> str:
        return "adaptive"


def make_gamma_policy(gamma: int | str | GammaPolicy) -> GammaPolicy:
    """``int`` → fixed γ; "adaptive" / "heuristic" → those policies; a policy passes through."""
    if isinstance(gamma, GammaPolicy):
        return gamma
    if gamma == "adaptive":
        return AdaptiveGamma()
    if gamma == "heuristic":
        return HeuristicGamma()
    if isinstance(gamma, str):
        raise InvalidArgumentError(f"gamma must be an int >= 1, 'adaptive' or 'heuristic', got {gamma!r}")
    return FixedGamma(gamma)
