"""The adaptive γ policy with a chain-first tree drafter: each step it prices the chain alone against the
whole tree (the chain plus its siblings' rescues, over k times the verify positions), so it verifies the
tree where block columns are nearly free (one row) and the chain where each costs (many rows)."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.decoders.gamma import AdaptiveGamma
from specdec.decoders.policy import StepResult

WIDTH, ALPHA, RESCUE = 2, 0.5, 0.4


def call_seconds(tokens: int) -> float:
    """A target call over ``tokens`` tokens: flat to 24 (the weights' read), then ~proportional."""
    return 0.04 * max(1.0, tokens / 24) ** 0.8


class Only(AdaptiveGamma):
    """Negative controls: the same policy verifying only the whole tree, or only its chain."""

    def __init__(self, width: int):
        super().__init__()
        self.only = width

    def widths(self) -> tuple[int, ...]:
        return (self.only,) if self.tree_width > 1 else (1,)


def seconds_per_token(policy: AdaptiveGamma, rows: int, seed: int, tokens: int = 3000) -> float:
    """A top-2 tree drafter at ``rows`` rows: its chain kept per position with α 0.5, a miss rescued by
    the sibling with probability 0.4 (kept only where the step verified the tree); ±5 % timing noise."""
    rng, made, seconds = random.Random(seed), 0, 0.0
    while made < tokens:
        gamma = policy.next_gamma(rows)
        kept = [next((k for k in range(gamma) if rng.random() > ALPHA), gamma) for _ in range(rows)]
        rescued = [k < gamma and rng.random() < RESCUE for k in kept]
        whole = gamma > 0 and policy.siblings
        nodes = WIDTH * gamma if whole else gamma
        verify = call_seconds(rows * (nodes + 1)) * math.exp(rng.gauss(0, 0.05))
        drafting = 0.0005 * gamma  # the drafter runs every row at once
        width = WIDTH if gamma else 1
        step = StepResult(
            gamma,
            kept,
            [gamma] * rows,
            verify,
            drafting,
            rows,
            asked=gamma,
            width=width,
            nodes=nodes,
            rescued=rescued if gamma else None,
        )
        policy.update(step)
        made += sum(kept) + rows + (sum(rescued) if whole else 0)
        seconds += verify + drafting
    return seconds / made


@pytest.mark.parametrize(("rows", "wins"), [(1, WIDTH), (16, 1)])
def test_the_policy_verifies_the_tree_where_it_pays_and_the_chain_where_it_does_not(rows, wins):
    adaptive = [seconds_per_token(AdaptiveGamma(), rows, seed) for seed in range(3)]
    right = [seconds_per_token(Only(wins), rows, seed) for seed in range(3)]
    wrong = [seconds_per_token(Only(WIDTH + 1 - wins), rows, seed) for seed in range(3)]
    assert sum(right) < 0.95 * sum(wrong)  # the choice matters here
    assert sum(adaptive) <= 1.03 * sum(right)  # and the policy makes it


def test_a_tree_is_priced_as_its_chain_plus_the_siblings_rescues():
    policy = AdaptiveGamma(max_gamma=4)
    policy.position_acceptance = lambda: [0.5] * 4
    policy.rescues.rates = lambda: [0.4] * 4
    assert policy.tokens_per_call(2) == pytest.approx(1.75)
    assert policy.tokens_per_call(2, WIDTH) == pytest.approx(1.75)  # no chain-first tree seen yet
    policy.update(StepResult(2, [0], [2], 0.04, 0.0, asked=2, width=WIDTH, nodes=4, rescued=[True]))
    assert policy.widths() == (1, WIDTH)
    assert policy.tokens_per_call(2, WIDTH) == pytest.approx(1.75 + 0.5 * 0.4 + 0.25 * 0.4)


def test_a_tree_whose_chain_cannot_be_verified_alone_is_priced_whole():
    """EAGLE-2's dynamic tree (not chain-first): its k·γ nodes are its block, every step."""
    policy = AdaptiveGamma()
    policy.update(StepResult(2, [1], [2], 0.04, 0.0, asked=2, width=4, nodes=8))
    assert policy.widths() == (4,)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.sampled_from([1, 2, 5, 16]),
    seed=st.integers(0, 10_000),
    steps=st.integers(0, 60),
    chain_first=st.booleans(),
)
def test_a_step_prices_every_option_as_rate_prices_it_alone(rows, seed, steps, chain_first):
    """``rates`` prices all (γ, width) options of a step at once, sharing what they share; each must be
    the number ``rate`` gives that option alone, bit for bit, and a drafting step ``next_gamma`` chooses
    must be the best drafting option (the best of all, or where a plain step rates best, its probe)."""
    rng, policy = random.Random(seed), AdaptiveGamma(max_gamma=6)
    for _ in range(steps):
        gamma = policy.next_gamma(rows)
        kept = [rng.randint(0, gamma) for _ in range(rows)]
        width = WIDTH if gamma else 1
        rescued = [rng.random() < RESCUE for _ in range(rows)] if gamma and chain_first else None
        verify = call_seconds(rows * (width * gamma + 1)) * rng.uniform(0.9, 1.1)
        step = StepResult(gamma, kept, [gamma] * rows, verify, 0.0005 * gamma, rows, asked=gamma,
                          width=width, nodes=width * gamma, rescued=rescued)  # fmt: skip
        policy.update(step)
    options = policy.rates(rows)
    assert set(options) == {(0, 1)} | {(g, w) for g in range(1, 7) for w in policy.widths()}
    assert all(options[g, w] == policy.rate(g, rows, width=w) for g, w in options)
    chosen = policy.next_gamma(rows)
    if options[0, 1] is not None and chosen:
        drafting = max(v for (g, _), v in options.items() if g)
        assert options[chosen, WIDTH if policy.siblings else 1] == drafting
