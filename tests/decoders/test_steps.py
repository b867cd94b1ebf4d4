"""The step-wise loop: requests that arrive and leave at any step get exactly what they get alone.

Random arrival and abort schedules over random requests (greedy and seeded sampling, each request its
own budget, seed and settings) with every drafter family (BiTA's trees and BiLD's per-row rollback
included) on tiny Llama and GPT-2 targets; after every step the
engine holds exactly the running rows.
"""

import math
from typing import ClassVar

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdec.decoders import BiLD, PlainDecoding, Request, SpeculativeSampling, StopCriteria
from specdec.decoders.blocks import ACCEPTED, BONUS, RESAMPLED, TARGET
from specdec.drafters import EarlyExitDrafter, ModelDrafter, PromptLookupDrafter
from specdec.drafters.bita import BiTADrafter
from specdec.drafters.combined import LookupThenBiTADrafter
from specdec.drafters.tandem import TandemDrafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.sampling import SamplingConfig, row_keys
from tiny import make_eagle3, make_gpt2, make_llama, make_tandem, make_tokenizer

POOL = [
    [5, 9, 14, 22, 5, 9, 14, 30, 31, 5, 9],
    [40, 41, 42, 40, 41],
    [7, 70, 71, 72, 73, 74, 7, 70, 71],
    [100, 3],
    [12, 13, 14, 15, 16, 17, 18, 12, 13, 14, 15, 16, 17],
]


def bita(target, tok):
    torch.manual_seed(0)
    adapter = BiTAAdapter(model_signature(target), 4, 3, "deep").eval()  # reserved slots: a learned prefix
    return BiTADrafter(adapter, "efficient")


FAMILIES = {
    "plain": None,
    "bild": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=7), tok),
    "bita": bita,
    "lookup+bita": lambda target, tok: LookupThenBiTADrafter(bita(target, tok), min_ngram=1),
    "prompt-lookup": lambda target, tok: PromptLookupDrafter(),
    "model": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=7), tok),
    "tandem": lambda target, tok: TandemDrafter(make_tandem(target), tok),
    "eagle3": lambda target, tok: make_eagle3(target),
    # the llama target's own weights, drafting trees: drafts are kept, so draft caps are put to the test
    "tree": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=0, layers=4), tok, tree_width=2),
    "early-exit": lambda target, tok: EarlyExitDrafter(target, 2),
}
SAMPLINGS = [
    SamplingConfig(),
    SamplingConfig(temperature=1.0, top_k=20),
    SamplingConfig(temperature=0.7, top_p=0.9),
]


class Setup:
    """A target, its engine and one drafter of a family, built once per (target kind, family)."""

    _built: ClassVar[dict] = {}

    def __init__(self, kind: str, family: str):
        tok = make_tokenizer()
        target = (make_llama if kind == "llama" else make_gpt2)(len(tok), seed=0, layers=4)
        self.engine = Engine(target)
        make = FAMILIES[family]
        self.drafter = None if make is None else make(target, tok)
        if self.drafter is not None:
            self.drafter.attach(self.engine)
        self.method = PlainDecoding() if make is None else SpeculativeSampling(3)
        if family == "bild":  # rollback per row: not lossless, but a request still gets what it gets alone
            self.method = BiLD(fallback_threshold=0.3, rollback_threshold=2.0)

    @classmethod
    def get(cls, kind: str, family: str) -> "Setup":
        if (kind, family) not in cls._built:
            cls._built[(kind, family)] = cls(kind, family)
        return cls._built[(kind, family)]

    def loop(self, prompt: list[int], sampling: SamplingConfig, max_new: int, seed: int, thresholds=None):
        stop = StopCriteria(max_new, frozenset({0}))
        request = Request([prompt], sampling, stop, row_keys([seed], 1), thresholds=thresholds)
        return self.method.loop(self.engine, self.drafter, request)

    def alone(self, prompt, sampling: SamplingConfig, max_new: int, seed: int, thresholds=None) -> list[int]:
        """What a request gets alone; with BiLD thresholds of its own, what BiLD with those gets."""
        method = self.method if thresholds is None else BiLD(*thresholds)
        stop = StopCriteria(max_new, frozenset({0}))
        loop = method.loop(self.engine, self.drafter, Request([prompt], sampling, stop, row_keys([seed], 1)))
        while loop.active:
            loop.step()
        return loop.result().tokens[0]


requests = st.lists(
    st.tuples(
        st.integers(0, len(POOL) - 1),  # prompt
        st.integers(1, 12),  # max_new_tokens
        st.integers(0, 2**32),  # seed
        st.integers(0, 6),  # arrival step
        st.one_of(st.none(), st.integers(0, 8)),  # abort this many steps after arrival
        st.sampled_from(SAMPLINGS),  # its own sampling settings
        st.one_of(st.none(), st.integers(0, 2)),  # its own draft cap (0: speculation off for it)
        st.one_of(st.none(), st.tuples(st.sampled_from([0.0, 0.3, 0.9]), st.sampled_from([0.0, 2.0, 1e9]))),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["llama", "gpt2"]), st.sampled_from(list(FAMILIES)), requests)
def test_arrivals_and_aborts_never_change_what_a_request_gets(kind, family, reqs):
    """Greedy rows beside sampled rows of other settings, each with its own budget, seed and draft cap
    (at most that many accepted draft tokens per step; 0: speculation off for it), and under BiLD its own
    fallback and rollback thresholds (or the method's)."""
    setup = Setup.get(kind, family)
    reqs = sorted(reqs, key=lambda r: r[3])
    if family != "bild":
        reqs = [(*r[:7], None) for r in reqs]
    first = reqs[0]
    loop = setup.loop(POOL[first[0]], first[5], first[1], first[2], first[7])
    row_of = {0: 0}  # request index -> row
    got: dict[int, list[int]] = {0: []}
    kinds: dict[int, list[str]] = {0: []}
    arrived, caps = {0: first[3]}, {0: None}
    step, pending = first[3], list(range(1, len(reqs)))
    while loop.active or pending:
        for i in [i for i in pending if reqs[i][3] <= step]:
            prompt, max_new, seed, _, _, sampling, cap, thresholds = reqs[i]
            stop = StopCriteria(max_new, frozenset({0}))
            # BiTA shapes one block for every row (no caps); BiLD's text depends on its drafts (not lossless).
            cap = None if family in ("bita", "lookup+bita", "bild") else cap
            keys = row_keys([seed], 1)
            (row,) = loop.admit([POOL[prompt]], keys, stop, sampling, draft_cap=cap, thresholds=thresholds)
            row_of[i], got[i], kinds[i], arrived[i], caps[i] = row, [], [], step, cap
            pending.remove(i)
        doomed = [
            row_of[i]
            for i, r in enumerate(reqs)
            if i in row_of and r[4] is not None and arrived[i] + r[4] == step
        ]
        loop.abort(doomed)
        if loop.active:
            for out in loop.step():
                i = next(i for i, row in row_of.items() if row == out.row)
                got[i] += out.tokens
                kinds[i] += out.provenance
                assert len(out.provenance) == len(out.tokens)
                assert caps[i] is None or out.provenance.count(ACCEPTED) <= caps[i]
        assert setup.engine.batch_size == len(loop.active)  # finished and aborted rows freed their slots
        step += 1
    result = loop.result()
    for i, (prompt, max_new, seed, _, _, sampling, _, thresholds) in enumerate(reqs):
        alone = setup.alone(POOL[prompt], sampling, max_new, seed, thresholds)
        assert result.tokens[row_of[i]] == got[i]
        if result.finish_reasons[row_of[i]] == "abort":
            assert got[i] == alone[: len(got[i])]
        else:
            assert got[i] == alone
        assert [k == ACCEPTED for k in kinds[i]] == result.from_draft[row_of[i]]
        assert set(kinds[i]) <= {ACCEPTED, RESAMPLED, BONUS, TARGET}


@pytest.mark.parametrize("ignore_own", [False, True])
def test_bild_rows_with_their_own_thresholds_share_a_batch(ignore_own):
    """One prompt twice in one batch: α_RB 0 gives the target's own text, α_FB 0 with no rollback the
    small model's; each equals BiLD run alone with its thresholds. Negative control: a loop that applies
    the method's thresholds to every row fails it."""
    setup = Setup.get("llama", "bild")
    strict, loose = (0.3, 0.0), (0.0, 1e9)
    loop = setup.loop(POOL[0], SamplingConfig(), 12, 1, strict)
    loop.admit([POOL[0]], row_keys([1], 1), StopCriteria(12, frozenset({0})), thresholds=loose)
    if ignore_own:
        loop.row_thresholds = lambda which: loop.thresholds[which]
    while loop.active:
        loop.step()
    got = loop.result().tokens
    plain = Setup.get("llama", "plain").alone(POOL[0], SamplingConfig(), 12, 1)
    alone = [setup.alone(POOL[0], SamplingConfig(), 12, 1, t) for t in (strict, loose)]
    assert alone[0] == plain and alone[1] != plain  # the thresholds matter for this prompt
    assert (got == alone) is not ignore_own
    for bad in ((1.5, 1.0), (0.5, -1.0), (0.5, math.nan)):
        with pytest.raises(InvalidArgumentError, match="α_FB must be in"):
            loop.admit([POOL[1]], row_keys([1], 1), StopCriteria(4), thresholds=bad)
    with pytest.raises(InvalidArgumentError, match="does not decode with BiLD"):
        Setup.get("llama", "model").loop(POOL[0], SamplingConfig(), 4, 0).admit(
            [POOL[1]], row_keys([1], 1), StopCriteria(4), thresholds=strict
        )


def test_negative_control_a_row_admitted_with_the_wrong_pending_token_is_caught():
    """The same comparison fails when admission mislays a newcomer's state (its prompt's last token)."""
    setup = Setup.get("llama", "plain")
    loop = setup.loop(POOL[0], SamplingConfig(), 6, 1)
    loop.step()
    (row,) = loop.admit([POOL[2]], row_keys([2], 1), StopCriteria(6, frozenset({0})))
    loop.rows.pending[-1] = 99  # a broken admission
    while loop.active:
        loop.step()
    assert loop.result().tokens[row] != setup.alone(POOL[2], SamplingConfig(), 6, 2)


def test_provenance_of_a_plain_step_and_of_speculative_steps():
    plain = Setup.get("llama", "plain").loop(POOL[0], SamplingConfig(), 4, 0)
    assert {k for out in plain.step() for k in out.provenance} == {TARGET}
    spec = Setup.get("llama", "prompt-lookup").loop(POOL[4], SamplingConfig(), 12, 0)
    seen = []
    while spec.active:
        for out in spec.step():
            seen += out.provenance
            assert out.provenance[-1] != ACCEPTED or out.finish_reason is not None
    assert ACCEPTED in seen


def test_a_draft_cap_is_checked_and_trees_refuse_one():
    loop = Setup.get("llama", "model").loop(POOL[0], SamplingConfig(), 4, 0)
    with pytest.raises(InvalidArgumentError, match="draft_cap"):
        loop.admit([POOL[1]], row_keys([1], 1), StopCriteria(4), draft_cap=-1)
    tree = Setup.get("llama", "bita").loop(POOL[0], SamplingConfig(), 4, 0)
    with pytest.raises(InvalidArgumentError, match="chain drafter"):
        tree.admit([POOL[1]], row_keys([1], 1), StopCriteria(4), draft_cap=1)


@pytest.mark.parametrize("family", ["plain", "model"])
def test_abort_frees_the_row_at_once(family):
    setup = Setup.get("gpt2", family)
    loop = setup.loop(POOL[1], SamplingConfig(), 10, 0)
    (other,) = loop.admit([POOL[3]], row_keys([1], 1), StopCriteria(10, frozenset({0})))
    loop.step()
    loop.abort([0])
    assert loop.active == [other] and setup.engine.batch_size == 1
    assert loop.result().finish_reasons[0] == "abort"
    assert torch.equal(loop.rows.pending, loop.rows.pending[-1:])
