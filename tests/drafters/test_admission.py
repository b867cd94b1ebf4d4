"""Requests that join a running batch: a drafter told about a newcomer (``admit``) drafts for it what it
drafts when the newcomer was in the batch from the start, and keeps drafting the same for the others."""

import pytest

from specdec.drafters import (
    EarlyExitDrafter,
    LookupThenModelDrafter,
    ModelDrafter,
    PromptLookupDrafter,
    TruncatedDrafter,
)
from specdec.drafters.base import Draft, Drafter
from specdec.drafters.tandem import TandemDrafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.sampling import KeyedDraws, SamplingConfig
from tiny import make_eagle3, make_llama, make_tandem, make_tokenizer

PROMPTS = [[5, 9, 14, 22, 5, 9, 14, 30, 31], [40, 41, 42, 40, 41], [7, 70, 71, 72, 73, 74, 7, 70]]
GREEDY = SamplingConfig()

DRAFTERS = {
    "prompt-lookup": lambda target, tok: PromptLookupDrafter(),
    "prompt-only-lookup": lambda target, tok: PromptLookupDrafter(prompt_only=True),
    "model": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=7), tok),
    "truncated": lambda target, tok: TruncatedDrafter(target, tok, 2),
    "early-exit": lambda target, tok: EarlyExitDrafter(target, 2),
    "tandem": lambda target, tok: TandemDrafter(make_tandem(target), tok),
    "eagle3": lambda target, tok: make_eagle3(target),
    "lookup+model": lambda target, tok: LookupThenModelDrafter(
        ModelDrafter(make_llama(len(tok), seed=7), tok)
    ),
}


def drafts(drafter: Drafter, target: Engine, groups: list[list[list[int]]], gamma: int = 4) -> Draft:
    """Start the first group, admit the others one by one (target and drafter), then draft once."""
    drafter.attach(target)
    prefill = target.start(
        groups[0],
        extra_slots=16,
        hidden_layers=drafter.target_hidden_layers,
        reserved=drafter.reserved_slots,
    )
    drafter.begin(groups[0], prefill)
    for group in groups[1:]:
        drafter.admit(group, target.admit(group, hidden_layers=drafter.target_hidden_layers))
    batch = sum(len(g) for g in groups)
    return drafter.propose(gamma, GREEDY, KeyedDraws(list(range(batch)), [0] * batch))


@pytest.mark.parametrize("name", list(DRAFTERS))
def test_an_admitted_request_drafts_as_if_it_had_started_with_the_batch(name):
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=4)
    together = drafts(DRAFTERS[name](target, tok), Engine(target), [PROMPTS])
    joined = drafts(DRAFTERS[name](target, tok), Engine(target), [PROMPTS[:1], PROMPTS[1:2], PROMPTS[2:]])
    for row in range(len(PROMPTS)):
        n = int(together.row_lengths()[row])
        assert int(joined.row_lengths()[row]) == n
        assert joined.tokens[row, :n].tolist() == together.tokens[row, :n].tolist()
    assert int(together.row_lengths().sum()) > 0  # something was drafted, so the comparison means something


def test_a_drafter_without_admission_says_so():
    class Plain(PromptLookupDrafter):
        admit = Drafter.admit

    with pytest.raises(InvalidArgumentError, match="cannot add requests"):
        Plain().admit([[1, 2]], None)
