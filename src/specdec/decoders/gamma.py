"""Draft-length (γ) policies.

The expected tokens per target call with per-token acceptance α is E(γ) = (1 − α^(γ+1)) / (1 − α),
and a step of B rows costs T(B(γ+1)) + γ·T_draft: a target call over B(γ+1) tokens and γ drafted
positions. :class:`AdaptiveGamma` estimates E and both costs online and picks the γ that maximises
tokens per second, so it shortens drafts when verification gets expensive (a larger batch) or
acceptance drops, where HF's +2/−1 rule only reacts to the last step; and where no γ beats a plain
step it stops drafting (γ = 0), since a drafter that is bad at this text, or a block that is no
longer almost free at this load, only slows decoding down.
"""

from __future__ import annotations

from specdec.decoders.acceptance import PositionAcceptance
from specdec.decoders.costs import CallCosts, batch_bucket, nearest_bucket
from specdec.decoders.policy import GammaPolicy, StepResult, check_decay, check_gamma, expected_tokens
from specdec.decoders.siblings import Rescues
from specdec.errors import InvalidArgumentError


class FixedGamma(GammaPolicy):
    """The same γ every step; with ``off_from``, plain steps at batches of that many rows or more (vLLM's
    ``speculative_disable_by_batch_size``: a fixed cut-off where verify blocks stop being almost free)."""

    def __init__(self, gamma: int, off_from: int | None = None):
        self.gamma = self.max_gamma = check_gamma(gamma)
        if off_from is not None:
            check_gamma(off_from, "off_from (a batch size)")
        self.off_from = off_from

    def next_gamma(self, batch_size: int = 1) -> int:
        return 0 if self.off_from is not None and batch_size >= self.off_from else self.gamma

    def __repr__(self) -> str:
        return f"fixed(γ={self.gamma})" + (f", off from {self.off_from} rows" if self.off_from else "")


class HeuristicGamma(GammaPolicy):
    """HF assisted generation's rule: +2 after a fully accepted draft, −1 otherwise."""

    def __init__(self, initial: int = 5, max_gamma: int = 16):
        self.gamma, self.max_gamma = check_gamma(initial, "initial"), check_gamma(max_gamma, "max_gamma")

    def update(self, step: StepResult) -> None:
        if not step.gamma:
            return  # a forced plain step (budget or context edge) says nothing about the drafter
        all_accepted = all(a == p for a, p in zip(step.accepted, step.proposed, strict=True))
        self.gamma = min(self.max_gamma, self.gamma + 2) if all_accepted else max(1, self.gamma - 1)

    def __repr__(self) -> str:
        return "heuristic(+2/-1)"


MAX_PROBE_WAIT = 256  # plain steps between probes of a drafter that keeps failing them, at most
# A probe is paid for only where a drafter that is always right would beat a plain step by more than
# this: call timings drift by about as much as the rows' contexts grow (a 32-token call timed early
# looked 5-10 % cheaper than it was later at 16 rows on the reference CPU), and where a block column
# costs about a plain step (16 rows and more there) a perfect drafter gains nothing, so a gain
# within the drift is noise, and each probe there cost one to eight plain steps (2026-11-24 trace).
PROBE_MARGIN = 0.1


class AdaptiveGamma(GammaPolicy):
    """Pick the γ (0: a plain step) that maximises tokens per second at the step's batch size, online.

    For ``B`` rows, drafting γ tokens brings B · (1 + ρ(E(γ) − 1)) tokens (E(γ) = 1 + Σ_k Π_{j≤k} α_j with α_k
    the decayed share of rows that kept draft position k among those that reached it, see
    :class:`~specdec.decoders.acceptance.PositionAcceptance`; ρ the share of the asked-for draft tokens the
    drafter does propose — a prompt lookup finds no match on many rows) for T(B(γ+1)) + γ · T_draft(B); a
    plain step brings B for T(B). T is one curve over the tokens a call computes (:class:`CallCosts`), fed by
    every step, plain ones included; T_draft the time per drafted position, a curve over the rows drafted for.
    At one row a verify block is nearly free and speculation pays; at many rows each block column costs about
    a plain step and it does not: the policy switches itself off there, and back on when the batch shrinks, at
    the batch size this machine and drafter call for rather than at a fixed cut-off. It starts with a plain
    step (nothing timed yet) and widens blocks by doublings as the curve's optimism invites, so learning a new
    batch size costs a step about twice a plain one, not a wide block. Timing feedback makes the γ schedule
    depend on the machine and the load; the text does not (greedy, and coupled sampling, emit the target's own
    choice at every position whatever γ is).

    A drafter of top-k trees (k nodes per draft position, its chain first) is priced both ways each step:
    the chain alone, T(B(γ+1)), or the whole tree, T(B(kγ+1)) for E(γ) plus one token per row wherever
    the chain misses at a depth whose siblings hold the target's token (:mod:`~specdec.decoders.siblings`,
    learnt from every step, chain-only ones too), and :attr:`siblings` says which the step verifies: the
    tree on one row, where its extra nodes ride along for free, its chain at many rows, where each node
    costs every row a block column.
    """

    def __init__(
        self, max_gamma: int = 12, decay: float = 0.9, probe_every: int = 8, alpha_decay: float = 0.99
    ):
        self.max_gamma = check_gamma(max_gamma, "max_gamma")
        self.decay = check_decay(decay, "decay")
        # α remembers ~100 drafting steps, the costs ~10 steps: a drafter right 20 % of the time pays
        # (barely) at one row, and an estimate from the last 10 steps is often low enough by chance to
        # switch it off, and off it only learns from rare probes (what the first version of this policy
        # did on the 2026-11-24 results page). Call costs drift with load and must follow it quickly.
        self.alpha_decay = check_decay(alpha_decay, "alpha_decay")
        # While drafting does not pay, a plain step now and then (at a batch size where a drafter that
        # is always right would pay) drafts anyway: plain steps say nothing about the drafter, and the
        # text ahead may suit it better (a formula, a copy). The first probe comes after probe_every
        # plain steps; each one that drafts and does not bring drafting back doubles the wait (up to
        # MAX_PROBE_WAIT steps), so a drafter that never pays costs next to nothing. A probe where no row
        # proposed anything (a prompt lookup without a match: most steps, for lookup) taught nothing and
        # cost nothing, so it is asked again at the next step rather than counted: counted, three or four
        # such misses pushed the wait to 64+ steps and a fresh process at one request stayed plain for
        # its first ~270 steps, where lookup would have paid (2026-11-25 trace, one run in three).
        self.probe_every = check_gamma(probe_every, "probe_every")
        self._probe_wait, self._since_probe, self._probing = self.probe_every, 0, False
        self.accepted, self.rejected = 4.0, 1.0  # prior: α ≈ 0.8 until evidence arrives
        self.positions = PositionAcceptance(self.max_gamma, self.alpha_decay)
        self.asked, self.proposed = 1.0, 1.0  # prior: the drafter proposes what it is asked for
        self.call_time = CallCosts(decay)
        # seconds per drafted position over the rows drafted for: a drafter call computes one token per
        # row, so its cost is a curve over rows as a target call's is over tokens, optimistic outside the
        # batch sizes measured (proportional below, flat above) so that after a narrow or a wide batch,
        # drafting at the other size is tried again and measured
        self.draft_cost = CallCosts(decay, flat_above=True)
        self._drafted: dict[int, list[float]] = {}  # batch bucket -> decayed [Σ steps asked, Σ drafted]
        self.gamma = 0
        # the drafter's trees, as its drafting steps show them: nodes per draft position, and whether
        # their chain can be verified alone (chain-first); misses of that chain its siblings rescued
        self.tree_width, self.chain_first, self.rescues = 1, False, Rescues(self.max_gamma, self.alpha_decay)

    @property
    def alpha(self) -> float:
        return self.accepted / (self.accepted + self.rejected)

    def position_acceptance(self) -> list[float]:
        """α_k for draft positions k = 1 … max_gamma, the first shrunk towards the pooled :attr:`alpha`."""
        return self.positions.rates(self.alpha)

    def tokens_per_call(self, gamma: int, width: int = 1) -> float:
        """E(γ) from the per-position acceptance: 1 + Σ_{k ≤ γ} Π_{j ≤ k} α_j; for a chain-first tree of
        ``width`` > 1 also Σ_k Π_{j < k} α_j · (1 − α_k) · r_k, a sibling's rescue at the chain's miss."""
        totals = self.tokens_per_call_curve(width)
        return totals[min(gamma, len(totals) - 1)]

    def tokens_per_call_curve(self, width: int = 1) -> list[float]:
        """:meth:`tokens_per_call` for γ = 0 … ``max_gamma``, in one pass over the positions."""
        rescue = self.rescues.rates() if width > 1 and self.chain_first else None
        totals, total, run = [1.0], 1.0, 1.0
        for k, alpha in enumerate(self.position_acceptance()):
            if rescue:
                total += run * (1.0 - alpha) * rescue[k]
            run *= alpha
            total += run
            totals.append(total)
        return totals

    @property
    def proposal_rate(self) -> float:
        """ρ: the share of asked-for draft tokens the drafter proposed."""
        return self.proposed / self.asked

    def drafting_share(self, rows: int) -> float:
        """The share of steps asked to draft at ``rows`` rows (nearest batch bucket) in which some row did
        propose: the ones that pay for a wide verify call (1 before any evidence)."""
        if not self._drafted:
            return 1.0
        weight, hits = nearest_bucket(self._drafted, rows)
        return hits / max(weight, 1e-9)

    def draft_time(self, rows: int) -> float:
        """Seconds per drafted position at ``rows`` rows (0 before any drafting was timed)."""
        return self.draft_cost(rows) or 0.0

    def rate(
        self, gamma: int, rows: int, alpha: float | None = None, rho: float | None = None, width: int = 1
    ) -> float | None:
        """Estimated tokens per second of a step of ``gamma`` at ``rows`` rows (None before any timing),
        verifying ``width`` nodes per draft position; ``alpha`` prices the drafts as a geometric run of
        that acceptance instead of the measured one."""
        expected = self.tokens_per_call(gamma, width) if alpha is None else expected_tokens(alpha, gamma)
        return self._rate(gamma, rows, width, expected, self._step_prices(rows, rho))

    def rates(self, rows: int) -> dict[tuple[int, int], float | None]:
        """:meth:`rate` of every step the policy may choose at ``rows`` rows, by (γ, width); what the
        options share (E(γ) per width, a plain call's cost, the drafting share and cost) computed once: a
        step prices ~25 options, and pricing each alone was ~0.1 ms of host work a step."""
        prices = self._step_prices(rows)
        curves = {w: self.tokens_per_call_curve(w) for w in {1, *self.widths()}}
        return {
            (g, w): self._rate(g, rows, w, curves[w][g], prices)
            for g in range(self.max_gamma + 1)
            for w in (self.widths() if g else (1,))
        }

    def _step_prices(self, rows: int, rho: float | None = None) -> tuple[float | None, float, float, float]:
        """What a step's price shares whatever its γ: T(rows), the share of steps that drafted, the
        seconds per drafted position, and ρ."""
        rho = self.proposal_rate if rho is None else rho
        return self.call_time(rows), self.drafting_share(rows), self.draft_time(rows), rho

    def _rate(self, gamma: int, rows: int, width: int, expected: float, prices: tuple) -> float | None:
        """Tokens per second of a step of ``gamma`` bringing ``expected`` tokens a row, at ``prices``."""
        plain, share, draft_time, rho = prices
        verify = self.call_time(rows * (width * gamma + 1))
        if verify is None:
            return None
        verify = max(verify, plain)  # noise must not price a block under a plain step of its rows
        # A step where no row proposes anything (a prompt lookup without a match) is a plain call.
        drafted = share if gamma else 0.0
        verify = drafted * verify + (1.0 - drafted) * plain
        per_row = 1.0 + rho * (expected - 1.0)
        return rows * per_row / max(verify + gamma * draft_time, 1e-9)

    def widths(self) -> tuple[int, ...]:
        """Nodes per draft position a step may verify: the drafter's trees' (1 for a chain drafter), or
        for chain-first trees that or their chain alone."""
        if self.tree_width == 1:
            return (1,)
        return (1, self.tree_width) if self.chain_first else (self.tree_width,)

    def next_gamma(self, batch_size: int = 1) -> int:
        rows = max(1, batch_size)
        rates, width = {}, {}  # per γ: the best rate over the widths, and that width
        options = self.rates(rows)
        for g in range(self.max_gamma + 1):
            width[g] = max(self.widths() if g else (1,), key=lambda w: options[g, w] or 0.0)
            rates[g] = options[g, width[g]]
        self._probing = False
        if rates[0] is None:  # nothing timed yet: a plain step, the cheapest call to learn from
            self.gamma = 0
            return 0
        self.gamma = max(rates, key=rates.get)
        self.siblings = width[self.gamma] > 1
        if self.gamma:
            self._probe_wait, self._since_probe = self.probe_every, 0  # drafting pays again
            return self.gamma
        self._since_probe += 1
        perfect = self.rate(1, rows, alpha=1.0, rho=1.0)  # could any drafter pay here?
        if self._since_probe >= self._probe_wait and perfect > (1 + PROBE_MARGIN) * rates[0]:
            # The draft length the estimates rate best: a wider block tells more draft positions, and
            # on the reference CPU γ = 1 was the slowest block per token with transformers' attention (a
            # 2-token call cost 17-21 % over a step, a 5-token one 4-8 %).
            self._probing = True
            probe = max(range(1, self.max_gamma + 1), key=rates.get)
            self.siblings = width[probe] > 1
            return probe
        return 0

    def update(self, step: StepResult) -> None:
        d, rows = self.decay, max(1, step.rows)
        self.call_time.add(rows * ((step.gamma if step.nodes is None else step.nodes) + 1), step.verify_time)
        asked = step.gamma if step.asked is None else step.asked
        if not asked:
            return  # a plain step says nothing about the drafter
        if self._probing and step.gamma:  # a probe that drafted: the next one waits twice as long
            self._since_probe, self._probe_wait = 0, min(2 * self._probe_wait, MAX_PROBE_WAIT)
        per_row = max(1, len(step.proposed))
        self.proposed = d * self.proposed + sum(step.proposed) / per_row
        self.asked = d * self.asked + asked
        share = self._drafted.setdefault(batch_bucket(rows), [0.0, 0.0])
        share[0], share[1] = d * share[0] + 1.0, d * share[1] + (step.gamma > 0)
        if not step.gamma:
            return  # asked, but no row proposed anything
        self.tree_width, self.chain_first = step.width, step.rescued is not None
        if step.rescued is not None:
            self.rescues.count(step.accepted, step.proposed, step.rescued, per_row)
        self.accepted = self.alpha_decay * self.accepted + sum(step.accepted) / per_row
        rejections = sum(a < p for a, p in zip(step.accepted, step.proposed, strict=True))
        self.rejected = self.alpha_decay * self.rejected + rejections / per_row
        self.positions.count(step.accepted, step.proposed, per_row)
        self.draft_cost.add(rows, step.draft_time / step.gamma)

    def __repr__(self) -> str:
        return "adaptive"


def make_gamma_policy(gamma: int | str | GammaPolicy) -> GammaPolicy:
    """``int`` (or its digits, as a command line gives it) → fixed γ; "adaptive" / "heuristic" → those
    policies; a policy passes through."""
    if isinstance(gamma, GammaPolicy):
        return gamma
    if isinstance(gamma, str) and gamma.isdigit():
        return FixedGamma(int(gamma))
    if gamma == "adaptive":
        return AdaptiveGamma()
    if gamma == "heuristic":
        return HeuristicGamma()
    if isinstance(gamma, str):
        raise InvalidArgumentError(f"gamma must be an int >= 1, 'adaptive' or 'heuristic', got {gamma!r}")
    return FixedGamma(gamma)
