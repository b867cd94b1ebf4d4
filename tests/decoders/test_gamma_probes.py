"""The adaptive γ's probes: how a policy that stopped drafting looks again, and what it costs."""

import math
import random

from specdec.decoders import AdaptiveGamma, FixedGamma
from specdec.decoders.gamma import MAX_PROBE_WAIT
from specdec.decoders.policy import StepResult


class CountsEmptyProbes(AdaptiveGamma):
    """The negative control: a probe where no row proposed anything counts as a failed one (the wait
    doubles), as it did before 2026-11-25."""

    def update(self, step: StepResult) -> None:
        if self._probing and not step.gamma:
            self._since_probe, self._probe_wait = 0, min(2 * self._probe_wait, MAX_PROBE_WAIT)
        super().update(step)


def switched_off(policy: AdaptiveGamma) -> AdaptiveGamma:
    """Feed ``policy`` one-row steps of a drafter that is never right until it stops drafting."""
    for _ in range(400):
        gamma = policy.next_gamma(1)
        policy.update(StepResult(gamma, [0], [gamma], 0.04 * (1 + 0.03 * gamma), 0.002 * gamma, asked=gamma))
    assert policy.next_gamma(1) == 0
    return policy


def next_probe(policy: AdaptiveGamma, limit: int = 1000) -> int:
    """Plain steps until the policy probes; the probe's γ."""
    for _ in range(limit):
        gamma = policy.next_gamma(1)
        if gamma:
            return gamma
        policy.update(StepResult(0, [0], [0], 0.04, 0.0, asked=0))
    raise AssertionError("no probe")


def test_a_probe_where_nothing_was_proposed_is_asked_again_and_not_counted():
    """Prompt lookup finds no match on most steps. A probe that met one of those taught nothing and cost a
    plain call: the next step probes again, and the wait only grows after a probe that did draft. The
    control, which counted empty probes, waits twice as long after each (a fresh process at one request
    stayed plain for ~270 steps that way, one run in three)."""
    for make, retries in ((AdaptiveGamma, True), (CountsEmptyProbes, False)):
        policy = switched_off(make())
        gamma = next_probe(policy)
        policy.update(StepResult(0, [0], [0], 0.04, 0.0, asked=gamma))  # no match: nothing proposed
        assert (policy.next_gamma(1) > 0) is retries
    policy = switched_off(AdaptiveGamma())
    gamma = next_probe(policy)
    policy.update(StepResult(gamma, [0], [gamma], 0.045, 0.002 * gamma, asked=gamma))  # drafted, rejected
    assert policy.next_gamma(1) == 0  # a probe that drafted and failed: wait again


def recovery(policy: AdaptiveGamma, seed: int, bad_steps: int = 100) -> int:
    """Steps until ``policy`` drafts by choice again (not as a probe) at one row, after ``bad_steps`` of a
    lookup-like drafter that is never right, once the text turns copyable: a match on 30 % of steps,
    each copied token right 80 % of the time."""
    rng = random.Random(seed)
    for t in range(100_000):
        alpha = 0.0 if t < bad_steps else 0.8
        gamma = policy.next_gamma(1)
        if t >= bad_steps and gamma and not policy._probing:
            return t - bad_steps
        proposed = gamma if rng.random() < 0.3 else 0
        kept = next((k for k in range(proposed) if rng.random() > alpha), proposed)
        verify = 0.04 * (1 + 0.03 * proposed) * math.exp(rng.gauss(0, 0.1))
        policy.update(StepResult(proposed, [kept], [proposed], verify, 0.0, 1, asked=gamma))
    raise AssertionError("never drafted again")


def test_a_switched_off_lookup_drafts_again_soon_after_the_text_turns_copyable():
    """Mean over 30 seeds of the steps to get back to drafting: ~13 where empty probes are asked again,
    ~39 for the control that counts them."""
    mean = sum(recovery(AdaptiveGamma(), s) for s in range(30)) / 30
    control = sum(recovery(CountsEmptyProbes(), s) for s in range(30)) / 30
    assert mean < 20 < 30 < control


def under_load(policy, seed: int, rows: int = 16, steps: int = 256) -> tuple[float, int]:
    """Seconds per token and drafting steps at ``rows`` rows on a machine where each block column costs a
    plain step (the reference CPU at 16 rows) and calls get slower as the contexts grow (~10 % per 100
    steps: a call size timed a while ago looks cheaper than it now is), with a drafter right 30 % of the
    time: drafting never pays here."""
    rng, made, seconds, probes = random.Random(seed), 0, 0.0, 0
    for t in range(steps):
        gamma = policy.next_gamma(rows)
        probes += gamma > 0
        kept = [next((k for k in range(gamma) if rng.random() > 0.3), gamma) for _ in range(rows)]
        verify = 0.0045 * rows * (gamma + 1) * (1 + t / 1000) * math.exp(rng.gauss(0, 0.03))
        policy.update(StepResult(gamma, kept, [gamma] * rows, verify, 0.0005 * gamma, rows, asked=gamma))
        made, seconds = made + sum(kept) + rows, seconds + verify + 0.0005 * gamma
    return seconds / made, probes


def load_excess(make_policy) -> tuple[float, list[int]]:
    """Mean over three seeds of the policy's time per token over plain decoding's, and its drafting steps."""
    ratios, probes = [], []
    for seed in range(3):
        cost, count = under_load(make_policy(), seed)
        ratios.append(cost / under_load(FixedGamma(1, off_from=1), seed)[0])
        probes.append(count)
    return sum(ratios) / len(ratios), probes


def test_under_load_no_probe_is_paid_for_a_gain_within_the_timings_drift(monkeypatch):
    """Where a block column costs a plain step, even a drafter that is always right gains nothing, yet
    with drifting timings it seems to gain a few per cent now and then; each probe costs a plain step.
    The policy probes only for a gain beyond the drift: its first look and a rare re-look, ~1 % of
    plain decoding's time."""
    excess, probes = load_excess(AdaptiveGamma)
    assert excess <= 1.012 and max(probes) <= 3
    monkeypatch.setattr("specdec.decoders.gamma.PROBE_MARGIN", 0.0)  # negative control: no margin
    excess, probes = load_excess(AdaptiveGamma)
    assert excess > 1.012 and min(probes) >= 5
