"""Several drafters behind one (a server's per-request choice): every row is drafted by the drafter its
request chose, exactly as that drafter drafts for it alone, through arrivals and departures, and the
text is still the target's own (greedy and seeded sampling, coupled rule)."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdec.decoders import PlainDecoding, Request, SpeculativeSampling, StopCriteria
from specdec.drafters import EarlyExitDrafter, ModelDrafter, PromptLookupDrafter
from specdec.drafters.base import Draft
from specdec.drafters.bita import BiTADrafter
from specdec.drafters.routed import RoutedDrafter, merge_drafts
from specdec.drafters.tandem import TandemDrafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.sampling import KeyedDraws, SamplingConfig, row_keys
from tiny import make_llama, make_tandem, make_tokenizer

PROMPTS = [
    [5, 9, 14, 22, 5, 9, 14, 30, 31, 5, 9],
    [40, 41, 42, 40, 41],
    [7, 70, 71, 72, 73, 74, 7, 70, 71],
    [100, 3],
    [12, 13, 14, 15, 16, 17, 18, 12, 13, 14, 15, 16, 17],
]
GREEDY = SamplingConfig()
MAKERS = {
    "lookup": lambda target, tok: PromptLookupDrafter(),
    "model": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=7), tok),
    "tandem": lambda target, tok: TandemDrafter(make_tandem(target), tok),
}
TOK = make_tokenizer()
TARGET = make_llama(len(TOK), seed=0, layers=4)


def routed() -> RoutedDrafter:
    return RoutedDrafter({name: make(TARGET, TOK) for name, make in MAKERS.items()})


def first_draft(drafter, groups, routes=None, gamma: int = 4) -> Draft:
    """Start the first group, admit the others (with their routes, when given), then draft once."""
    engine = Engine(TARGET)
    layers = drafter.target_hidden_layers
    options = (lambda i: {"routes": routes[i]}) if routes else (lambda i: {})
    drafter.begin(groups[0], engine.start(groups[0], extra_slots=16, hidden_layers=layers), **options(0))
    for i, group in enumerate(groups[1:], 1):
        drafter.admit(group, engine.admit(group, hidden_layers=layers), **options(i))
    batch = sum(len(g) for g in groups)
    return drafter.propose(gamma, GREEDY, KeyedDraws(list(range(batch)), [0] * batch))


def test_each_row_gets_the_draft_its_own_drafter_makes_for_it():
    routes = [["model", "lookup"], ["tandem", "model"], ["lookup"]]
    groups = [PROMPTS[:2], PROMPTS[2:4], PROMPTS[4:]]
    draft = first_draft(routed(), groups, routes)
    flat = [r for group in routes for r in group]
    for name, make in MAKERS.items():
        rows = [i for i, r in enumerate(flat) if r == name]
        alone = first_draft(make(TARGET, TOK), [[PROMPTS[i] for i in rows]])
        for j, row in enumerate(rows):
            n = int(alone.row_lengths()[j])
            assert int(draft.row_lengths()[row]) == n
            assert draft.tokens[row, :n].tolist() == alone.tokens[j, :n].tolist()
    assert (draft.row_lengths() > 0).sum() >= 4  # the drafters did draft, so the comparison means something


def test_negative_control_rows_merged_in_the_wrong_order_are_caught():
    """The comparison above fails when a drafter's draft lands on another drafter's rows."""
    a = Draft(torch.tensor([[1, 2], [3, 4]]))
    b = Draft(torch.tensor([[5, 6]]))
    right = merge_drafts([([0, 2], a), ([1], b)], 3)
    wrong = merge_drafts([([2, 0], a), ([1], b)], 3)
    assert right.tokens.tolist() == [[1, 2], [5, 6], [3, 4]]
    assert wrong.tokens.tolist() != right.tokens.tolist()


def test_merged_distributions_are_one_hot_where_a_drafter_had_none():
    probs = torch.softmax(torch.randn(1, 3, 10, dtype=torch.float64), -1)
    sampled = Draft(torch.tensor([[4, 2, 7]]), probs)
    lookup = Draft(torch.tensor([[9, 1]]), None, torch.tensor([2]))
    merged = merge_drafts([([1], sampled), ([0], lookup)], 2)
    assert merged.row_lengths().tolist() == [2, 3]
    assert torch.equal(merged.probs[1], probs[0])
    assert merged.probs[0, :2].argmax(-1).tolist() == [9, 1]
    assert torch.equal(merged.probs[0, :2].sum(-1), torch.ones(2, dtype=torch.float64))


def test_what_cannot_be_routed_or_chosen_is_refused():
    torch.manual_seed(0)
    tree = BiTADrafter(BiTAAdapter(model_signature(TARGET), 4, 3, "deep").eval(), "efficient")
    with pytest.raises(InvalidArgumentError, match="whole verify block"):
        RoutedDrafter({"bita": tree})
    with pytest.raises(InvalidArgumentError, match="target's own cache"):
        RoutedDrafter({"early": EarlyExitDrafter(TARGET, 2)})
    with pytest.raises(InvalidArgumentError, match="no drafter 'nope'"):
        routed().check_route("nope")
    request = Request([PROMPTS[0]], GREEDY, StopCriteria(4), row_keys([0], 1), route="model")
    with pytest.raises(InvalidArgumentError, match="drafts with 'prompt-lookup' alone"):
        SpeculativeSampling(3).loop(Engine(TARGET), PromptLookupDrafter(), request)


ENGINE, DRAFTER = Engine(TARGET), routed()
SAMPLINGS = [GREEDY, SamplingConfig(temperature=1.0, top_k=20), SamplingConfig(temperature=0.7, top_p=0.9)]


ALONE = {name: make(TARGET, TOK) for name, make in MAKERS.items()}


def alone(prompt: list[int], sampling: SamplingConfig, max_new: int, seed: int, route: str):
    """The request decoded alone with the drafter it chose: its tokens and where each came from."""
    request = Request([prompt], sampling, StopCriteria(max_new, frozenset({0})), row_keys([seed], 1))
    loop = SpeculativeSampling(3).loop(Engine(TARGET), ALONE[route], request)
    tokens, kinds = [], []
    while loop.active:
        for out in loop.step():
            tokens += out.tokens
            kinds += out.provenance
    return tokens, kinds


def plain(prompt: list[int], sampling: SamplingConfig, max_new: int, seed: int) -> list[int]:
    request = Request([prompt], sampling, StopCriteria(max_new, frozenset({0})), row_keys([seed], 1))
    loop = PlainDecoding().loop(Engine(TARGET), None, request)
    while loop.active:
        loop.step()
    return loop.result().tokens[0]


requests = st.lists(
    st.tuples(
        st.integers(0, len(PROMPTS) - 1),
        st.integers(1, 10),  # max_new_tokens
        st.integers(0, 2**32),  # seed
        st.integers(0, 5),  # arrival step
        st.sampled_from(SAMPLINGS),
        st.sampled_from(list(MAKERS)),  # the drafter it chose
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests)
def test_requests_choosing_drafters_as_they_come_and_go_are_drafted_as_alone(reqs):
    """Each request gets the target's own text, and every step accepts what its drafter alone gets
    accepted (provenance per token), so its drafter kept its state through the others' comings and
    goings (a fixed γ: no policy learns from the other rows)."""
    reqs = sorted(reqs, key=lambda r: r[3])
    prompt, max_new, seed, step, sampling, route = reqs[0]
    first = Request(
        [PROMPTS[prompt]], sampling, StopCriteria(max_new, frozenset({0})), row_keys([seed], 1), route=route
    )
    loop = SpeculativeSampling(3).loop(ENGINE, DRAFTER, first)
    row_of, got, kinds, pending = {0: 0}, {0: []}, {0: []}, list(range(1, len(reqs)))
    while loop.active or pending:
        for i in [i for i in pending if reqs[i][3] <= step]:
            prompt, max_new, seed, _, sampling, route = reqs[i]
            stop = StopCriteria(max_new, frozenset({0}))
            (row_of[i],) = loop.admit([PROMPTS[prompt]], row_keys([seed], 1), stop, sampling, route=route)
            got[i], kinds[i] = [], []
            pending.remove(i)
        if loop.active:
            for out in loop.step():
                i = next(i for i, row in row_of.items() if row == out.row)
                got[i] += out.tokens
                kinds[i] += out.provenance
        assert len(DRAFTER.routes) == len(loop.active) == ENGINE.batch_size
        step += 1
    for i, (prompt, max_new, seed, _, sampling, route) in enumerate(reqs):
        assert got[i] == plain(PROMPTS[prompt], sampling, max_new, seed)
        assert (got[i], kinds[i]) == alone(PROMPTS[prompt], sampling, max_new, seed, route)
