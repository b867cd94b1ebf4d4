"""The plan of a bench run: which methods run (HF only where it has the same drafter, a router's fixed cap,
fixed γs beside the adaptive policy, the fast engine for the drafters named), and their rotation."""

import argparse

import pytest
import torch

from specdec.benchmarks.plan import fixed_gammas, plan_methods, rotated
from specdec.drafters import ModelDrafter, PromptLookupDrafter
from tiny import make_llama


def test_method_order_rotates_through_every_method():
    methods = plan_methods({"a": PromptLookupDrafter(), "b": PromptLookupDrafter()}, [], with_hf=True)
    orders = [rotated(methods, turn) for turn in range(len(methods))]
    assert all(sorted(m.name for m in order) == sorted(m.name for m in methods) for order in orders)
    assert [order[0].name for order in orders] == [m.name for m in methods]


def test_hf_assisted_runs_only_where_hf_has_an_equivalent():
    names = [m.name for m in plan_methods({"lookup": PromptLookupDrafter(), "tandem": object()}, [], True)]
    assert names == ["hf-plain", "ours-plain", "hf-assisted[lookup]", "ours-sps[lookup]", "ours-sps[tandem]"]
    # HF has no tree drafting and no trimmed head: the same assistant would run under another's name
    model = make_llama(320, seed=0)
    drafters = {
        "small": ModelDrafter(model),
        "tree-2:small": ModelDrafter(model, tree_width=2),
        "vocab-8:small": ModelDrafter(model, vocab=torch.arange(8)),
    }
    hf = [m.name for m in plan_methods(drafters, [], True) if m.kind == "hf-assisted"]
    assert hf == ["hf-assisted[small]"]


def test_a_drafter_with_a_router_runs_at_a_fixed_gamma_cap():
    class Routed:
        router = object()

    drafters = {"lookup": PromptLookupDrafter(), "routed": Routed()}
    methods = plan_methods(drafters, [], False, router_gamma_max=6)
    assert [(m.name, m.gamma) for m in methods[1:]] == [
        ("ours-sps[lookup]", "adaptive"),
        ("ours-sps[routed, γ ≤ 6]", "6"),
    ]


def test_fixed_gammas_run_beside_the_adaptive_policy_except_where_a_router_decides():
    class Routed:
        router = object()

    drafters = {"lookup": PromptLookupDrafter(), "routed": Routed()}
    methods = plan_methods(drafters, [], False, router_gamma_max=6, fixed_gammas=fixed_gammas("2, 4"))
    assert [(m.name, m.gamma) for m in methods[1:]] == [
        ("ours-sps[lookup]", "adaptive"),
        ("ours-sps[lookup, γ=2]", "2"),
        ("ours-sps[lookup, γ=4]", "4"),
        ("ours-sps[routed, γ ≤ 6]", "6"),
    ]
    assert fixed_gammas("") == ()


def test_fast_drafters_limit_the_fast_engine_to_the_ones_named():
    drafters = {"a": PromptLookupDrafter(), "b": PromptLookupDrafter()}
    engines = ("eager", "fast")
    names = [m.name for m in plan_methods(drafters, [], False, engines=engines, fast_drafters=("b",))]
    assert names == ["ours-plain", "ours-plain[fast]", "ours-sps[a]", "ours-sps[b]", "ours-sps[b, fast]"]
    every = [m.name for m in plan_methods(drafters, [], False, engines=engines)]
    assert "ours-sps[a, fast]" in every and "ours-sps[b, fast]" in every


@pytest.mark.parametrize("text", ["0", "two", "3,-1", "2.5"])
def test_a_bad_fixed_gamma_is_a_clear_error(text):
    with pytest.raises(argparse.ArgumentTypeError, match="γ values >= 1"):
        fixed_gammas(text)
