"""γ policies: the expected-tokens formula, HF's +2/−1 rule, and the cost model's estimates and choices."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.decoders import AdaptiveGamma, FixedGamma, HeuristicGamma, make_gamma_policy
from specdec.decoders.gamma import StepResult, expected_tokens


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


def test_adaptive_fits_the_verify_cost_line():
    policy = AdaptiveGamma(initial=1, max_gamma=8)
    assert policy.verify_time(1) is None  # one width seen so far: no line yet
    for gamma in (1, 2, 3, 4, 2, 5):
        policy.update(step(gamma, [0], verify=0.040 + 0.003 * (gamma + 1)))
    assert policy.verify_time(1) == pytest.approx(0.043, rel=1e-6)
    assert policy.verify_time(9) == pytest.approx(0.067, rel=1e-6)


def test_adaptive_explores_widths_before_it_can_fit():
    policy = AdaptiveGamma(initial=2, max_gamma=8)
    policy.update(step(2, [2], verify=0.05))
    assert policy.next_gamma() == 3  # a second width, so the fit has two points


def test_adaptive_estimates_alpha_from_geometric_runs():
    rng = random.Random(0)
    policy = AdaptiveGamma(initial=4, max_gamma=12, decay=0.99)
    for _ in range(2000):
        accepted = next((k for k in range(4) if rng.random() > 0.6), 4)  # each token kept with α = 0.6
        policy.update(step(4, [accepted], verify=0.05 + 0.001 * rng.random()))
    assert policy.alpha == pytest.approx(0.6, abs=0.05)


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
    policy = AdaptiveGamma(initial=1, max_gamma=12)
    for _ in range(20):  # long enough for the prior (α ≈ 0.8) to decay away
        for gamma in (1, 3, 6, 9):
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


def test_adaptive_stops_drafting_where_it_does_not_pay_and_probes_again():
    policy = AdaptiveGamma(initial=1, max_gamma=12, probe_every=4)
    for _ in range(20):
        for gamma in (1, 2, 3):
            accepted = geometric_rows(0.1, gamma)
            policy.update(step(gamma, accepted, verify=0.05 + 0.005 * (gamma + 1), draft=0.004 * gamma))
    assert policy.gamma == 0  # γ = 1: 1.1 tokens in the time of 1.16 plain steps, and worse beyond
    assert [policy.next_gamma() for _ in range(8)] == [0, 0, 0, 1, 0, 0, 0, 1]
    for _ in range(30):  # the probes now find a drafter that is right every time
        policy.update(step(1, [1], verify=0.06))
    assert policy.next_gamma() > 1


def test_adaptive_speculates_where_the_batch_makes_a_block_cheap_and_not_where_it_does_not():
    """One row: a block of k tokens costs about one step (speculation pays); 64 rows: each token of the
    block costs nearly a step of its own (it does not). The policy keeps both and asks by batch size; a
    policy with one cost model for every batch size (as before) gives both the same γ."""
    policy = AdaptiveGamma(initial=2, max_gamma=8, probe_every=4)
    for _ in range(60):
        for rows, (fixed, per_token) in ((1, (1.0, 0.001)), (64, (0.1, 0.9))):
            gamma = policy.next_gamma(rows) or 1
            accepted = [1 if gamma > 1 else rows % 2] * rows  # α about one half
            policy.update(
                StepResult(gamma, accepted, [gamma] * rows, fixed + per_token * (gamma + 1), 0.0, rows)
            )
    assert all(policy.next_gamma(1) >= 1 for _ in range(8))
    assert sum(policy.next_gamma(64) > 0 for _ in range(8)) == 2  # plain steps but the probes (1 in 4)
