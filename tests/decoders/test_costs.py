"""The call-cost curve the adaptive γ policy prices verify blocks with."""

import pytest

from specdec.decoders.costs import CallCosts


def test_call_costs_interpolate_between_sizes_and_are_optimistic_outside_them():
    costs = CallCosts(decay=0.5)
    assert costs(8) is None  # nothing timed yet
    costs.add(8, 0.040)
    assert costs(16) == pytest.approx(0.040)  # one size: flat up to twice it (optimistic: it is tried)
    assert costs(64) == pytest.approx(0.040 * 64 / 16)  # and the per-token cost of that guess beyond
    assert costs(2) == pytest.approx(0.010)  # proportional below (cost per token never falls as calls shrink)
    costs.add(32, 0.100)
    assert costs(16) == pytest.approx(0.040 + 0.060 * 8 / 24)  # linear between the sizes seen
    assert costs(64) == pytest.approx(0.100)  # 4x the size cost 2.5x: flat for one doubling past the top
    assert costs(128) == pytest.approx(0.200)  # and the per-token cost of that guess beyond
    costs.add(32, 0.200)  # the decayed mean follows the machine: (0.5 · 0.98 · 0.1 + 0.2) / (0.5 · 0.98 + 1)
    assert costs(32) == pytest.approx((0.049 + 0.2) / 1.49)


def test_call_costs_never_price_a_call_under_the_smallest_one_measured():
    costs = CallCosts(decay=0.9)
    costs.add(28, 0.47)  # a slow measurement
    costs.add(80, 0.29)  # a lucky one, wider
    assert costs(50) == pytest.approx(0.47) and costs(150) == pytest.approx(0.47)  # not 0.29
    assert costs(14) == pytest.approx(0.235)  # below every measurement: proportional, as before


def test_call_costs_follow_a_dip_between_wider_sizes():
    """On the reference CPU a 2-token block costs ~20 % over a one-token step and a 5-token one ~6 %: the
    curve follows that (a rule that no wider call looks cheaper than a narrower one priced every block at
    the 2-token cost), and never goes under the one-token step."""
    costs = CallCosts(decay=0.9)
    for tokens, seconds in ((1, 0.100), (2, 0.120), (5, 0.106), (8, 0.095)):
        costs.add(tokens, seconds)
    assert costs(5) == pytest.approx(0.106, rel=1e-6)
    assert costs(4) == pytest.approx(0.120 - 0.014 * 2 / 3, rel=1e-6)
    assert costs(8) == pytest.approx(0.100)  # measured under a step: noise, priced as the step


def test_call_costs_price_wider_calls_by_size_where_the_widest_already_cost_theirs():
    """Many rows: a call twice as wide cost twice as much, so the next doubling is not tried as if free."""
    costs = CallCosts(decay=0.9)
    costs.add(16, 0.1)
    costs.add(32, 0.2)
    assert costs(64) == pytest.approx(0.4)


def test_call_costs_try_past_a_bump_flat():
    """One row on the reference CPU: a 2-token block costs 20 % over a step. The next doubling is priced
    flat, not by that slope (which would price a 4-token block at 1.6 steps, where it costs 1.07)."""
    costs = CallCosts(decay=0.9)
    costs.add(1, 0.100)
    costs.add(2, 0.120)
    assert costs(4) == pytest.approx(0.120)


def test_call_costs_can_stay_flat_above_the_widest_call():
    costs = CallCosts(decay=0.9, flat_above=True)
    costs.add(1, 0.002)
    assert costs(16) == pytest.approx(0.002) and costs(1000) == pytest.approx(0.002)


def test_call_costs_forget_sizes_not_timed_for_a_while():
    costs = CallCosts(decay=0.9, age=0.5, forget=0.1)
    costs.add(80, 0.3)  # a wide block, timed once
    for _ in range(3):
        costs.add(16, 0.1)
    assert costs(80) == pytest.approx(0.3)  # weight 0.125: still known
    costs.add(16, 0.1)
    assert costs(80) == pytest.approx(
        0.1 * 80 / 32
    )  # forgotten: one doubling of flat optimism, then per token


def test_call_costs_bin_nearby_sizes_together():
    costs = CallCosts(decay=0.9)
    costs.add(30, 0.3)
    costs.add(34, 0.34)  # the same half-octave: one point at the mean size
    assert costs(32) == pytest.approx(0.32)
