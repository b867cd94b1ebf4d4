"""γ policies: the expected-tokens formula, HF's +2/−1 rule, and the cost model's estimates and choices."""

import functools
import itertools
import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specdec.decoders import AdaptiveGamma, FixedGamma, HeuristicGamma, make_gamma_policy
from specdec.decoders.costs import CallCosts
from specdec.decoders.gamma import MAX_PROBE_WAIT
from specdec.decoders.policy import StepResult, expected_tokens
from specdec.errors import InvalidArgumentError


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(1, 20))
def test_expected_tokens_is_the_mean_of_a_capped_geometric_run(alpha, gamma):
    """E(γ) = Σ_{k=0..γ} α^k: the accepted prefix length (each token kept with α, stop at the first
    rejection, at most γ) plus the one token the target always adds."""
    assert expected_tokens(alpha, gamma) == pytest.approx(sum(alpha**k for k in range(gamma + 1)), rel=1e-9)
    assert 1.0 <= expected_tokens(alpha, gamma) <= gamma + 1
    assert expected_tokens(alpha, gamma + 1) >= expected_tokens(alpha, gamma)


def test_expected_tokens_edges():
    assert expected_tokens(0.0, 5) == 1.0
    assert expected_tokens(1.0, 5) == 6.0
    assert expected_tokens(0.5, 1) == 1.5


def step(
    gamma: int, accepted: list[int], proposed: list[int] | None = None, verify=0.01, draft=0.0
) -> StepResult:
    return StepResult(gamma, accepted, proposed or [gamma] * len(accepted), verify, draft)


def test_heuristic_adds_two_after_a_full_accept_and_drops_one_otherwise():
    policy = HeuristicGamma(initial=5, max_gamma=8)
    policy.update(step(5, [5]))
    assert policy.next_gamma() == 7
    policy.update(step(7, [7]))
    assert policy.next_gamma() == 8  # capped
    policy.update(step(8, [8, 3]))  # one row rejected: the batch counts as not fully accepted
    assert policy.next_gamma() == 7
    for _ in range(10):
        policy.update(step(policy.next_gamma(), [0]))
    assert policy.next_gamma() == 1  # floored
    policy.update(step(1, [2], proposed=[2]))  # a short proposal fully accepted is a full accept
    assert policy.next_gamma() == 3


def test_fixed_and_named_policies():
    assert make_gamma_policy(3).next_gamma() == 3 and isinstance(make_gamma_policy(3), FixedGamma)
    assert isinstance(make_gamma_policy("adaptive"), AdaptiveGamma)
    assert isinstance(make_gamma_policy("heuristic"), HeuristicGamma)
    policy = HeuristicGamma()
    assert make_gamma_policy(policy) is policy


def test_adaptive_estimates_alpha_from_geometric_runs():
    rng = random.Random(0)
    policy = AdaptiveGamma(max_gamma=12, decay=0.99)
    for _ in range(2000):
        accepted = next((k for k in range(4) if rng.random() > 0.6), 4)  # each token kept with α = 0.6
        policy.update(step(4, [accepted], verify=0.05 + 0.001 * rng.random()))
    assert policy.alpha == pytest.approx(0.6, abs=0.05)


def test_adaptive_counts_the_rows_a_drafter_leaves_empty():
    """A prompt lookup finds a match on some rows only: ρ is the share of asked-for tokens proposed, and
    a step where no row proposed anything lowers it without touching α."""
    policy = AdaptiveGamma(decay=0.99)
    for _ in range(1000):
        policy.update(StepResult(4, [4, 0, 0, 0], [4, 0, 0, 0], 0.05, 0.0, rows=4, asked=4))
        policy.update(StepResult(0, [0, 0, 0, 0], [0, 0, 0, 0], 0.05, 0.0, rows=4, asked=4))
    assert policy.proposal_rate == pytest.approx(0.125, abs=0.002)  # 4 of 16 asked, then 0 of 16
    assert policy.alpha == pytest.approx(1.0, abs=1e-6)  # the proposing row was always right


def geometric_rows(alpha: float, gamma: int, rows: int = 10_000) -> list[int]:
    """Accepted counts of a batch of rows in exactly the proportions of a capped geometric run."""
    shares = [alpha**k * (1 - alpha) for k in range(gamma)] + [alpha**gamma]
    return [k for k, share in enumerate(shares) for _ in range(round(share * rows))]


@pytest.mark.parametrize(
    ("alpha", "slope", "draft"),
    [
        (0.95, 0.0, 0.0),
        (0.05, 0.0, 0.002),
        (0.05, 0.004, 0.002),
        (0.8, 0.0, 0.001),
        (0.8, 0.02, 0.0),
        (0.6, 0.004, 0.004),
    ],
)
def test_adaptive_maximises_expected_tokens_per_unit_time(alpha, slope, draft):
    """Fed steps timed by a known cost model and accepted at rate α, it picks the γ that model prefers."""
    policy = AdaptiveGamma(max_gamma=12)
    for _ in range(100):  # long enough for the prior (α ≈ 0.8) to decay away from α's long memory
        for gamma in (0, 1, 3, 6, 9):
            accepted = geometric_rows(alpha, gamma)
            policy.update(step(gamma, accepted, verify=0.05 + slope * (gamma + 1), draft=draft * gamma))
    assert policy.alpha == pytest.approx(alpha, abs=0.01)

    def true_rate(g: int) -> float:  # g = 0: a plain step, one token per one-token call
        return expected_tokens(alpha, g) / (0.05 + slope * (g + 1) + draft * g)

    best, chosen = max(range(13), key=true_rate), policy.next_gamma()
    assert true_rate(chosen) >= 0.99 * true_rate(best)
    if slope == 0 and draft == 0:
        assert chosen == 12  # free drafts and free verification: as long as allowed
    if alpha < 0.1:
        assert chosen == (0 if slope else 1)  # drafting pays only while verifying more costs nothing


def machine(floor: float, per_token: float):
    """A target call's time on a toy machine: a fixed floor (reading the weights) until the arithmetic
    of ``n`` tokens takes longer."""
    return lambda tokens: max(floor, per_token * tokens)


def simulate(
    policy, call, alpha: float, draft_cost: float, load: list[int], per_row: int = 100, seed: int = 0
):
    """Run ``policy`` closed-loop through phases of the load (``rows`` running, until each produced about
    ``per_row`` tokens: the same work whatever the policy), each row's draft accepted as a geometric run
    of α; the seconds it took per token."""
    rng, tokens, seconds = random.Random(seed), 0, 0.0
    for rows in load:
        goal = tokens + rows * per_row
        while tokens < goal:
            gamma = policy.next_gamma(rows)
            kept = [next((k for k in range(gamma) if rng.random() > alpha), gamma) for _ in range(rows)]
            verify, drafting = call(rows * (gamma + 1)), draft_cost * gamma * (1 + rows / 16)
            policy.update(StepResult(gamma, kept, [gamma] * rows, verify, drafting, rows, asked=gamma))
            tokens, seconds = tokens + sum(kept) + rows, seconds + verify + drafting
    return seconds / tokens


def test_adaptive_stops_drafting_where_it_does_not_pay_and_probes_again():
    call = machine(0.05, 0.0)  # a block is free: only a drafter that is rarely right makes drafting lose
    policy = AdaptiveGamma(max_gamma=12, probe_every=4)
    simulate(policy, call, alpha=0.02, draft_cost=0.01, load=[1], per_row=200)
    assert policy.gamma == 0  # γ = 1: 1.02 tokens in the time of 1.2 plain steps, and worse beyond
    choices = []
    for _ in range(600):  # probes that keep failing come ever more rarely
        choices.append(policy.next_gamma())
        if choices[-1]:
            policy.update(StepResult(1, [0], [1], 0.05, 0.01, asked=1))
    probes = [i for i, gamma in enumerate(choices) if gamma]
    gaps = [b - a for a, b in itertools.pairwise(probes)]
    assert set(choices) == {0, 1} and gaps == sorted(gaps) and gaps[-1] == MAX_PROBE_WAIT  # backed off
    for _ in range(30):  # the probes now find a drafter that is right every time
        policy.update(StepResult(1, [1], [1], 0.05, 0.01, asked=1))
    assert policy.next_gamma() > 1


def test_adaptive_speculates_where_the_batch_makes_a_block_cheap_and_not_where_it_does_not():
    """One row: a block of a few tokens costs one step (speculation pays); 64 rows: each block column
    costs a step of its own (it cannot pay even with a drafter that is always right, so the policy does
    not even probe). One curve over the call's size serves both."""
    call = machine(0.04, 0.002)
    policy = AdaptiveGamma(max_gamma=8, probe_every=4)
    simulate(policy, call, alpha=0.6, draft_cost=0.002, load=[1, 64] * 20, per_row=10)
    assert all(policy.next_gamma(1) >= 2 for _ in range(8))
    assert all(policy.next_gamma(64) == 0 for _ in range(8))


@pytest.mark.parametrize("flat_above", [True, False])
def test_drafting_is_tried_at_a_batch_wider_than_any_it_was_timed_at(flat_above):
    """Verification nearly free at 16 rows (a GPU-like machine), drafting timed at one row only: priced by
    size past that, a drafted position at 16 rows would look 8x dearer, no probe would pay and drafting
    would never be tried (nor measured) there. Priced flat, it is tried and kept. ``flat_above=False``
    is the negative control."""
    policy = AdaptiveGamma(max_gamma=8)
    policy.draft_cost = CallCosts(policy.decay, flat_above=flat_above)
    simulate(policy, machine(0.02, 1e-5), 0.7, 0.002, [1], per_row=200)
    simulate(policy, machine(0.02, 1e-5), 0.7, 0.002, [16], per_row=50)
    drafts = sum(policy.next_gamma(16) > 0 for _ in range(8))
    assert drafts == 8 if flat_above else drafts == 0


# The adaptive policy learns the machine as it goes; the cut-off it is held to was picked knowing it.
WITHIN = 1.10


def mean_over_seeds(make_policy, call, alpha: float, draft_cost: float, load: list[int]) -> float:
    """Seconds per token over three seeds of the acceptance draws: on a short load one unlucky run of
    rejections can switch a weak drafter off early (a bandit's regret), which is a property of the
    policy's expectation only when averaged."""
    return sum(simulate(make_policy(), call, alpha, draft_cost, load, seed=s) for s in range(3)) / 3


def best_cutoff(call, alpha: float, draft_cost: float, load: list[int]) -> float:
    return min(
        mean_over_seeds(functools.partial(FixedGamma, g, off_from=b), call, alpha, draft_cost, load)
        for g in (1, 2, 4, 8)
        for b in (2, 4, 8, 16, 128)
    )


@settings(max_examples=40, deadline=None)
@given(
    floor=st.floats(0.01, 0.1),
    per_token=st.floats(1e-4, 1e-2),
    alpha=st.floats(0.0, 0.95),
    draft_cost=st.floats(0.0, 0.01),
    load=st.lists(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), min_size=3, max_size=6),
)
@example(floor=1 / 32, per_token=1 / 512, alpha=0.75, draft_cost=1 / 128, load=[64, 1, 1])
@example(floor=0.0336, per_token=0.0004, alpha=0.7723, draft_cost=0.0097, load=[64, 4, 8, 32, 2, 64])
def test_adaptive_does_about_as_well_as_the_best_fixed_cutoff(floor, per_token, alpha, draft_cost, load):
    """On a toy machine and a load that changes over time, the adaptive policy costs at most a little
    more time per token (10 %) than the best fixed cut-off in hindsight (the best of every γ and batch
    size to switch off at), its exploration included. The examples are loads that fell from 64 rows to
    few, which found a policy that priced one row's drafting at 64 rows' cost and never drafted again
    (1.11x and 1.14x the best cut-off)."""
    call = machine(floor, per_token)
    adaptive = mean_over_seeds(AdaptiveGamma, call, alpha, draft_cost, load)
    assert adaptive <= WITHIN * best_cutoff(call, alpha, draft_cost, load)


def test_fixed_gamma_with_a_cutoff_drafts_below_it_only():
    policy = FixedGamma(4, off_from=8)
    assert [policy.next_gamma(rows) for rows in (1, 7, 8, 64)] == [4, 4, 0, 0]
    with pytest.raises(InvalidArgumentError, match="off_from"):
        FixedGamma(4, off_from=0)


def test_never_switching_off_fails_that_bound():
    """The negative control: under load, drafting at every batch size costs far more than the best cut-off."""
    call, load = machine(0.04, 0.002), [1, 64, 16]
    best = best_cutoff(call, 0.6, 0.002, load)
    assert mean_over_seeds(lambda: FixedGamma(4), call, 0.6, 0.002, load) > WITHIN * best
    assert mean_over_seeds(AdaptiveGamma, call, 0.6, 0.002, load) <= WITHIN * best


def one_row(policy, alpha: float, seed: int, tokens: int = 3000) -> float:
    """Seconds per token of ``policy`` at one row on a CPU-like machine (a block costs 3 % more per extra
    token, a drafted token 5.5 % of a step, every timing ±10 % noise), drafts accepted with α."""
    rng, made, seconds = random.Random(seed), 0, 0.0
    while made < tokens:
        gamma = policy.next_gamma(1)
        kept = next((k for k in range(gamma) if rng.random() > alpha), gamma)
        verify = 0.04 * (1 + 0.03 * gamma) * math.exp(rng.gauss(0, 0.1))
        drafting = 0.055 * 0.04 * gamma * math.exp(rng.gauss(0, 0.1))
        policy.update(StepResult(gamma, [kept], [gamma], verify, drafting, 1, asked=gamma))
        made, seconds = made + kept + 1, seconds + verify + drafting
    return seconds / made


def excess_over_best_fixed(make_policy, alpha: float) -> float:
    """Mean over three seeds of the policy's time per token over the best fixed γ's."""
    ratios = []
    for seed in range(3):
        best = min(one_row(FixedGamma(g), alpha, seed) for g in (1, 2, 3, 4))
        ratios.append(one_row(make_policy(), alpha, seed) / best)
    return sum(ratios) / len(ratios)


@pytest.mark.parametrize("alpha", [0.15, 0.2, 0.3, 0.5])
def test_a_weak_drafter_that_pays_a_little_is_not_switched_off_by_chance(alpha):
    """The shipped drafts are right ~20 % of the time: at one row they pay about 10 %, and only if the
    policy keeps drafting. Its α estimate remembers ~100 drafting steps, so a run of rejections does not
    switch drafting off (where only rare probes would bring it back)."""
    assert excess_over_best_fixed(AdaptiveGamma, alpha) <= 1.04


def test_a_short_alpha_memory_fails_that_bound():
    """The negative control: α remembered over ~10 steps (the costs' memory; the policy's first version)
    loses ~7 % to the best fixed γ at α 0.2, drafting a tenth as often."""
    assert excess_over_best_fixed(lambda: AdaptiveGamma(alpha_decay=0.9), 0.2) > 1.04


def lookup_row(policy, seed: int, tokens: int = 3000) -> float:
    """Seconds per token at one row on the same machine with a prompt-lookup-like drafter: it finds a match
    (and proposes all it is asked for, each token kept with α 0.7) on 30 % of steps, nothing otherwise —
    a step where nothing is proposed is a plain call."""
    rng, made, seconds = random.Random(seed), 0, 0.0
    while made < tokens:
        gamma = policy.next_gamma(1)
        proposed = gamma if rng.random() < 0.3 else 0
        kept = next((k for k in range(proposed) if rng.random() > 0.7), proposed)
        verify = 0.04 * (1 + 0.03 * proposed) * math.exp(rng.gauss(0, 0.1))
        policy.update(StepResult(proposed, [kept], [proposed], verify, 0.0, 1, asked=gamma))
        made, seconds = made + kept + 1, seconds + verify
    return seconds / made


class ChargesEmptySteps(AdaptiveGamma):
    """The negative control: prices every step asked to draft as a wide call, even when nothing was
    proposed (the policy before drafting_share)."""

    def drafting_share(self, rows: int) -> float:
        return 1.0


def test_steps_without_a_proposal_are_priced_as_plain_calls():
    """Prompt lookup proposes nothing on most steps; those cost a plain call, so asking for a long draft
    costs little. Priced as wide calls, a lookup looks too dear to ask much of (measured: 1.08x plain at
    one request where a fixed γ = 4 gave 1.19x, benchmarks/CONTINUOUS_BATCHING_ROUNDS_2026-11-24.md)."""
    best = [min(lookup_row(FixedGamma(g), seed) for g in (1, 2, 4, 8)) for seed in range(3)]
    adaptive = sum(lookup_row(AdaptiveGamma(), s) / b for s, b in enumerate(best)) / 3
    control = sum(lookup_row(ChargesEmptySteps(), s) / b for s, b in enumerate(best)) / 3
    # The control fails the bound by less than it did (1.04x; 1.05x and more while the cost curve priced
    # every wider call at least at any narrower one's cost, which made the wide calls it charges dearer).
    assert adaptive <= 1.03 < control


def test_position_acceptance_counts_the_rows_that_reached_and_kept_each_position():
    """Rows kept 0, 2 and 3 of 3 draft tokens: all three reached position 1 (two kept it), two reached
    positions 2 and 3 (two and one kept them). With no shrinkage, α_k is exactly those shares."""
    policy = AdaptiveGamma(max_gamma=4)
    policy.update(StepResult(3, [0, 2, 3], [3, 3, 3], 0.05, 0.0, rows=3, asked=3))
    reached = [[round(3 * r, 9), round(3 * k, 9)] for r, k in policy.positions.sums]
    assert reached == [[3, 2], [2, 2], [2, 1], [0, 0]]


@settings(max_examples=15, deadline=None)
@given(alpha=st.floats(0.05, 0.95), gamma=st.integers(1, 8))
def test_per_position_estimate_of_geometric_runs_is_the_geometric_mean_run(alpha, gamma):
    """Fed geometric runs (each draft token kept with α whatever came before), the per-position estimate
    of tokens per call is the geometric formula's."""
    policy = AdaptiveGamma(max_gamma=8)
    accepted = geometric_rows(alpha, 8, rows=1000)
    for _ in range(300):  # long enough for the prior to decay away
        policy.update(step(8, accepted))
    assert policy.tokens_per_call(gamma) == pytest.approx(expected_tokens(alpha, gamma), rel=0.02)


def copy_row(policy, seed: int, tokens: int = 3000) -> float:
    """Seconds per token at one row on the ``one_row`` machine with a prompt lookup whose copies run on: it
    finds a match on half the steps and proposes all it is asked for; the first token is kept 25 % of
    the time and, once one is, each next one 85 % (a copy that starts right goes on being right)."""
    rng, made, seconds = random.Random(seed), 0, 0.0
    while made < tokens:
        gamma = policy.next_gamma(1)
        proposed = gamma if rng.random() < 0.5 else 0
        kept = next((k for k in range(proposed) if rng.random() > (0.85 if k else 0.25)), proposed)
        verify = 0.04 * (1 + 0.03 * proposed) * math.exp(rng.gauss(0, 0.1))
        policy.update(StepResult(proposed, [kept], [proposed], verify, 0.0, 1, asked=gamma))
        made, seconds = made + kept + 1, seconds + verify
    return seconds / made


class GeometricRuns(AdaptiveGamma):
    """The negative control: prices drafts as geometric runs of the pooled α (the policy before
    per-position acceptance)."""

    def tokens_per_call_curve(self, width: int = 1) -> list[float]:
        return [expected_tokens(self.alpha, gamma) for gamma in range(self.max_gamma + 1)]


def test_runs_that_go_on_once_started_are_drafted_long():
    """A lookup's copy is rarely right at its first token and then mostly right: a geometric run of the
    pooled α undervalues long drafts (measured on the results page: 1.67 tokens per target call where the
    geometric formula gives 1.26). Priced per position, the policy is within 5 % of the best fixed γ;
    priced as a geometric run it is over 5 % behind."""
    best = [min(copy_row(FixedGamma(g), seed) for g in (1, 2, 4, 8, 12)) for seed in range(3)]
    adaptive = sum(copy_row(AdaptiveGamma(), s) / b for s, b in enumerate(best)) / 3
    control = sum(copy_row(GeometricRuns(), s) / b for s, b in enumerate(best)) / 3
    assert adaptive <= 1.05 < control


# One row on the reference CPU (a target call's cost over its block width, in one-token steps): a 2-token
# block is the slowest shape, +20 %, a 4-6-token one +6-7 % (2026-11-25, measured at 300 and 900 tokens).
BUMP = {1: 1.0, 2: 1.2, 3: 1.12, 4: 1.07, 5: 1.06, 6: 1.07, 7: 1.08, 8: 1.09}


def bump_row(policy, seed: int, alpha: float = 0.3, tokens: int = 3000) -> float:
    """Seconds per token at one row on that machine (±5 % noise), a drafter kept with α 0.3 per token and
    drafting at 5 % of a step per token."""
    rng, made, seconds = random.Random(seed), 0, 0.0
    while made < tokens:
        gamma = policy.next_gamma(1)
        kept = next((k for k in range(gamma) if rng.random() > alpha), gamma)
        verify = 0.04 * BUMP.get(gamma + 1, 1.09 + 0.03 * (gamma - 7)) * math.exp(rng.gauss(0, 0.05))
        policy.update(StepResult(gamma, [kept], [gamma], verify, 0.002 * gamma, 1, asked=gamma))
        made, seconds = made + kept + 1, seconds + verify + 0.002 * gamma
    return seconds / made


def test_a_costly_two_token_block_does_not_keep_the_policy_from_wider_ones(monkeypatch):
    """After a plain step and a γ = 1 step at +20 %, a slope through those two prices a 4-token block at
    1.6 steps and it is never tried (the policy sat at γ = 1, 11 % behind the best fixed γ = 3); priced
    flat for one doubling it is tried, found at 1.07, and drafted. The control prices every call past
    the widest measured by size once two sizes are known (2.4 steps for a 4-token block): it too stays
    at γ = 1 (13 % behind)."""
    best = [min(bump_row(FixedGamma(g), seed) for g in range(1, 7)) for seed in range(3)]
    adaptive = sum(bump_row(AdaptiveGamma(), s) / b for s, b in enumerate(best)) / 3
    monkeypatch.setattr("specdec.decoders.costs._below_proportional", lambda points: len(points) < 2)
    control = sum(bump_row(AdaptiveGamma(), s) / b for s, b in enumerate(best)) / 3
    assert adaptive <= 1.04 < control
