"""Tree verification: the attention of a tree, the matching walk, and recursive rejection sampling over
siblings recovering q exactly (enumeration), statistically (chi-square), with negative controls."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

import specdec.sampling.tree as tree
from specdec.errors import InvalidArgumentError
from specdec.sampling import GeneratorDraws, KeyedDraws, match_verify
from specdec.sampling.tree import (
    chain_parents,
    children,
    depths,
    tree_attention,
    tree_match_verify,
    tree_rejection_sample,
)

F64 = torch.float64
# root → nodes 0, 1 (siblings); node 0 → nodes 2, 3; node 2 → node 4
PARENTS = (-1, -1, 0, 0, 2)


def test_tree_attention_depths_and_children():
    mask = tree_attention(PARENTS)
    expected = torch.zeros(6, 6, dtype=torch.bool)
    for pos, seen in {0: [0], 1: [0, 1], 2: [0, 2], 3: [0, 1, 3], 4: [0, 1, 4], 5: [0, 1, 3, 5]}.items():
        expected[pos, seen] = True
    assert torch.equal(mask, expected)
    assert depths(PARENTS) == [1, 1, 2, 2, 3]
    assert children(PARENTS) == [[0, 1], [2, 3], [], [4], [], []]
    assert torch.equal(tree_attention(chain_parents(4)), torch.ones(5, 5, dtype=torch.bool).tril())
    with pytest.raises(InvalidArgumentError, match="parent"):
        tree_attention((-1, 1))


def test_match_walk_takes_the_child_equal_to_the_choice():
    tokens = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 8, 9], [5, 6, 7, 8, 9]])
    # the target's choice at each block position [root, nodes], per row
    choices = torch.tensor([[6, 0, 8, 0, 0, 0], [5, 7, 0, 9, 0, 0], [5, 8, 0, 0, 3, 0]])
    result = tree_match_verify(tokens, PARENTS, lambda pos, depth, rows: choices[rows, pos])
    assert result.num_accepted.tolist() == [1, 3, 2]
    assert result.next_token.tolist() == [8, 0, 3]
    assert result.path.tolist() == [[1, -1, -1], [0, 2, 4], [0, 3, -1]]


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 3), st.integers(0, 4))
def test_match_walk_on_a_chain_is_match_verify(data, batch, gamma):
    tokens = st.lists(st.integers(0, 2), min_size=batch * (2 * gamma + 1), max_size=batch * (2 * gamma + 1))
    values = torch.tensor(data.draw(tokens), dtype=torch.long).reshape(batch, 2 * gamma + 1)
    draft, choices = values[:, :gamma], values[:, gamma:]
    chain = match_verify(draft, lambda i, rows: choices[rows, i])
    walk = tree_match_verify(draft, chain_parents(gamma), lambda pos, depth, rows: choices[rows, pos])
    assert torch.equal(walk.num_accepted, chain.num_accepted) and torch.equal(
        walk.next_token, chain.next_token
    )
    for row in range(batch):
        n = int(chain.num_accepted[row])
        assert walk.path[row, :n].tolist() == list(range(n))


# --- exact enumeration ----------------------------------------------------------------------------


def random_dist(rng: np.random.Generator, vocab: int) -> torch.Tensor:
    weights = rng.dirichlet(np.ones(vocab))
    weights[rng.random(vocab) < 0.3] = 0.0
    if weights.sum() == 0:
        weights[rng.integers(vocab)] = 1.0
    return torch.tensor(weights / weights.sum(), dtype=F64)


class Tables:
    """Context-dependent q, draft p, and deterministic top-k style candidates (distinct tokens)."""

    def __init__(self, vocab: int, seed: int):
        self.vocab, self.rng, self.cache = vocab, np.random.default_rng(seed), {}

    def _get(self, kind, context):
        if (kind, context) not in self.cache:
            if kind == "order":
                self.cache[kind, context] = [int(t) for t in self.rng.permutation(self.vocab)]
            else:
                self.cache[kind, context] = random_dist(self.rng, self.vocab)
        return self.cache[kind, context]

    def q(self, context):
        return self._get("q", context)

    def p(self, context):
        return self._get("p", context)

    def candidates(self, context, k):
        return self._get("order", context)[:k]


# A shape: the list of children shapes. Root with 2 children, the first with 2 children, one of them
# with 1 child (the shape of PARENTS).
SHAPE = [[[[]], []], []]


def round_law(tables: Tables, context: tuple, shape: list, sampled: bool) -> dict[tuple, float]:
    """Law of what one tree round emits (accepted path + resampled/bonus token), through the module's
    acceptance and residual (so a broken one is what it computes with). Deterministic children are
    distinct candidates (one-hot p); sampled children are independent draws from p."""
    law: dict[tuple, float] = defaultdict(float)

    def walk(shape, accepted, prob):
        ctx = context + accepted
        target = tables.q(ctx)
        remaining = prob
        tokens = tables.candidates(ctx, len(shape))
        for k, sub in enumerate(shape):
            if sampled:
                p = tables.p(ctx)
                accept = tree.acceptance_probability(p, target)
                for c in range(tables.vocab):
                    if p[c] * accept[c] > 0:
                        walk(sub, (*accepted, c), remaining * float(p[c] * accept[c]))
                remaining *= float((p * (1 - accept)).sum())
            else:
                c = tokens[k]
                p = torch.nn.functional.one_hot(torch.tensor(c), tables.vocab).to(F64)
                a = float(tree.acceptance_probability(p[c], target[c]))
                if a > 0:
                    walk(sub, (*accepted, c), remaining * a)
                remaining *= 1 - a
            target = tree.residual_distribution(p, target)
        for x, tx in enumerate(target.tolist()):
            law[(*accepted, x)] += remaining * tx

    walk(shape, (), 1.0)
    return law


def emitted_law(tables, shape, sampled, length, context=()):
    law: dict[tuple, float] = defaultdict(float)
    for tokens, prob in round_law(tables, context, shape, sampled).items():
        if len(tokens) >= length:
            law[tokens[:length]] += prob
        else:
            for rest, rp in emitted_law(
                tables, shape, sampled, length - len(tokens), context + tokens
            ).items():
                law[tokens + rest] += prob * rp
    return law


def target_law(tables, sequence):
    prob = 1.0
    for i, x in enumerate(sequence):
        prob *= float(tables.q(sequence[:i])[x])
    return prob


@pytest.mark.parametrize("sampled", [False, True], ids=["top-k-children", "sampled-children"])
@pytest.mark.parametrize("seed", range(4))
def test_joint_law_of_emitted_tokens_is_the_target_joint(seed, sampled):
    tables = Tables(4, seed)
    law = emitted_law(tables, SHAPE, sampled, length=3)
    for sequence in itertools.product(range(4), repeat=3):
        assert abs(law.get(sequence, 0.0) - target_law(tables, sequence)) < 1e-12, sequence


@pytest.mark.parametrize("sampled", [False, True], ids=["top-k-children", "sampled-children"])
def test_the_enumeration_detects_siblings_without_the_residual(monkeypatch, sampled):
    """Negative control: trying every sibling against the same q (no residual update) breaks the law."""
    monkeypatch.setattr(tree, "residual_distribution", lambda p, q: q)
    tables = Tables(4, seed=0)
    law = emitted_law(tables, SHAPE, sampled, length=2)
    worst = max(abs(law.get(s, 0.0) - target_law(tables, s)) for s in itertools.product(range(4), repeat=2))
    assert worst > 1e-3


# --- the implementation, statistically ------------------------------------------------------------


def flatten(tables: Tables, shape: list) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """PARENTS-style parents and each node's context-free token path, for deterministic candidates."""
    parents, paths = [], []

    def add(shape, parent, path):
        tokens = tables.candidates(path, len(shape))
        for k, sub in enumerate(shape):
            parents.append(parent)
            paths.append((*path, tokens[k]))
            add(sub, len(parents) - 1, (*path, tokens[k]))

    add(shape, -1, ())
    return tuple(parents), paths


def run_rounds(tables: Tables, rows: int, seed: int, depth_cap: int | None = None) -> list[tuple[int, ...]]:
    parents, paths = flatten(tables, SHAPE)
    tokens = torch.tensor([[path[-1] for path in paths]] * rows)
    q = torch.stack([tables.q(()), *[tables.q(path) for path in paths]])[None].expand(rows, -1, -1)
    caps = None if depth_cap is None else torch.full((rows,), depth_cap)
    result = tree_rejection_sample(tokens, parents, None, q, torch.Generator().manual_seed(seed), caps)
    out = []
    for row in range(rows):
        n = int(result.num_accepted[row])
        nodes = result.path[row, :n].tolist()
        out.append((*[paths[i][-1] for i in nodes], int(result.next_token[row])))
    return out


def chi_square_pvalue(samples: list[tuple], law: dict[tuple, float]) -> float:
    outcomes = sorted(k for k, v in law.items() if v > 0)
    counts = defaultdict(int)
    for s in samples:
        counts[s] += 1
    if not set(counts) <= set(outcomes):
        return 0.0  # an outcome the law gives probability 0
    expected = np.array([law[o] for o in outcomes]) * len(samples)
    return float(chisquare([counts[o] for o in outcomes], expected).pvalue)


@pytest.mark.parametrize("seed", range(2))
def test_the_sampler_draws_the_round_law(seed):
    tables = Tables(4, seed)
    law = round_law(tables, (), SHAPE, sampled=False)
    assert chi_square_pvalue(run_rounds(tables, 3000, seed), law) > 1e-3


def test_the_chi_square_detects_a_broken_sampler(monkeypatch):
    tables = Tables(4, seed=0)
    law = round_law(tables, (), SHAPE, sampled=False)  # the correct law, computed before breaking it
    monkeypatch.setattr(tree, "residual_distribution", lambda p, q: q)
    assert chi_square_pvalue(run_rounds(tables, 3000, 0), law) < 1e-6


def pruned(shape: list, depth: int) -> list:
    """The tree ``shape`` without its nodes deeper than ``depth``."""
    return [] if depth == 0 else [pruned(sub, depth - 1) for sub in shape]


@pytest.mark.parametrize("cap", [0, 1])
def test_a_row_capped_at_a_depth_draws_the_law_of_the_tree_cut_there(cap):
    """A request's draft cap stops its walk at that depth: what it emits follows the law of the tree
    pruned there (so still the target's law), and a sampler that ignores the cap is caught."""
    tables = Tables(4, seed=5)  # rounds keep 1+ node 63 % of the time, 2 nodes 38 %
    law = round_law(tables, (), pruned(SHAPE, cap), sampled=False)
    assert chi_square_pvalue(run_rounds(tables, 3000, 5, depth_cap=cap), law) > 1e-3
    assert chi_square_pvalue(run_rounds(tables, 3000, 5), law) < 1e-6


def test_keyed_draws_make_the_tree_sampler_reproducible():
    tables = Tables(5, seed=3)
    parents, paths = flatten(tables, SHAPE)
    tokens = torch.tensor([[path[-1] for path in paths]] * 3)
    q = torch.stack([tables.q(()), *[tables.q(path) for path in paths]])[None].expand(3, -1, -1)
    first = tree_rejection_sample(tokens, parents, None, q, KeyedDraws([1, 2, 3], [0, 4, 9]))
    again = tree_rejection_sample(tokens, parents, None, q, KeyedDraws([1, 2, 3], [0, 4, 9]))
    assert torch.equal(first.path, again.path) and torch.equal(first.next_token, again.next_token)


def test_a_certain_child_is_always_kept_and_an_impossible_one_never():
    q = torch.zeros(1, 3, 3, dtype=F64)
    q[0, 0] = torch.tensor([0.0, 1.0, 0.0])  # the target surely says 1 after the root
    q[0, 1:] = 1 / 3
    result = tree_rejection_sample(torch.tensor([[0, 1]]), (-1, -1), None, q, GeneratorDraws(None))
    assert result.path[0, 0] == 1 and result.num_accepted.tolist() == [1]
    with pytest.raises(InvalidArgumentError, match="q must be"):
        tree_rejection_sample(torch.tensor([[0, 1]]), (-1, -1), None, q[:, :2])
