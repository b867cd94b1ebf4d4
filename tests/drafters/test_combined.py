"""lookup+MODEL: prompt lookup where the context has a match, the draft model (or EAGLE-3 head) elsewhere."""

import copy

import pytest
import torch

from specdec.decoders import FixedGamma, PlainDecoding, Request, SpeculativeSampling, StopCriteria
from specdec.drafters import (
    LookupThenBiTADrafter,
    LookupThenModelDrafter,
    ModelDrafter,
    TreeShape,
    make_drafter,
)
from specdec.drafters.base import Feedback
from specdec.drafters.combined import BITA_LOOKUP_TOKENS
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.models.eagle3_layout import save_head
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, row_keys
from tiny import (
    chain_of,
    fresh_chain,
    make_eagle3,
    make_eagle3_head,
    make_llama,
    make_tokenizer,
    perturbed_copy,
)

# Repeated phrases give lookup matches; new text between them leaves the model to draft.
PROMPTS = [
    "the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the lazy dog. the quick",
    "def add(a, b): return a + b\ndef add(a, b): return a",
]


class SourceSpy(LookupThenModelDrafter):
    """Records, for each step, which source drafted and how many of its tokens the target kept."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.record = []

    def propose(self, gamma, sampling, draws, *, min_confidence=0.0):
        before = self.lookup_steps
        draft = super().propose(gamma, sampling, draws, min_confidence=min_confidence)
        self.source = "lookup" if self.lookup_steps > before else "model"
        self.proposed = draft.row_lengths()
        if (
            self.source == "model" and self.model._fed is not None
        ):  # its cache: every settled token (the pending one too), then its drafts
            held = self.model.engine.num_tokens.tolist()
            assert held == [len(h) + self.model._fed for h in self.history], "draft cache out of step"
        return draft

    def update(self, feedback):
        super().update(feedback)
        self.record.append((self.source, feedback.num_accepted.clone(), self.proposed))


@pytest.fixture(scope="module")
def setup():
    tok = make_tokenizer()
    return tok, make_llama(len(tok), seed=0, layers=2)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_a_model_that_is_the_target_stays_in_step_through_lookup_steps(setup, prompt):
    """With the target as the draft model, every token the model drafts is accepted, also right after
    lookup steps whose kept tokens it never ran: its cache caught up exactly."""
    tok, target = setup
    spy = SourceSpy(ModelDrafter(copy.deepcopy(target), tok), min_ngram=1)
    pipe = Pipeline(target, tok, drafter=spy)
    out = pipe.generate(prompt, method=SpeculativeSampling(4), max_new_tokens=120)
    assert out.token_ids == pipe.generate(prompt, method="plain", max_new_tokens=120).token_ids
    record = spy.record
    catch_up = [i for i in range(1, len(record)) if record[i][0] == "model" and record[i - 1][0] == "lookup"]
    assert any(int(record[i - 1][1].sum()) > 0 for i in catch_up), "a model step after kept lookup tokens"
    for source, kept, proposed in record:
        if source == "model":
            assert torch.equal(kept, proposed)
    # Negative control: the model that is not the target is rejected at times (the check can fail).
    other = SourceSpy(ModelDrafter(perturbed_copy(target, 0.5), tok), min_ngram=1)
    Pipeline(target, tok, drafter=other).generate(prompt, method=SpeculativeSampling(4), max_new_tokens=120)
    assert any(not torch.equal(k, p) for s, k, p in other.record if s == "model")


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_lookup_then_model_emits_plain_decodings_text(setup, temperature):
    tok, target = setup
    drafter = LookupThenModelDrafter(ModelDrafter(perturbed_copy(target, 0.05), tok))
    pipe = Pipeline(target, tok, drafter=drafter)
    kwargs = dict(max_new_tokens=32, temperature=temperature, seed=[3, 4])
    out = pipe.generate(PROMPTS, method=SpeculativeSampling(4), **kwargs)  # drafting every step
    assert out.token_ids == pipe.generate(PROMPTS, method="plain", **kwargs).token_ids
    assert drafter.lookup_steps > 0 and drafter.model_steps > 0


def test_lookup_plus_spelling_and_refusals(setup, tiny_model_dir):
    tok, target = setup
    drafter = make_drafter(f"lookup+{tiny_model_dir}", target, tok)
    assert isinstance(drafter, LookupThenModelDrafter) and isinstance(drafter.model, ModelDrafter)
    assert drafter.max_lookup is None
    tree = make_drafter(f"lookup+tree-2:{tiny_model_dir}", target, tok)
    assert tree.proposes_trees and tree.model.tree_width == 2
    assert make_drafter(f"lookup-3+{tiny_model_dir}", target, tok).max_lookup == 3
    with pytest.raises(InvalidArgumentError, match="min_ngram"):
        LookupThenModelDrafter(drafter.model, min_ngram=0)
    for spec in (f"lookup-0+{tiny_model_dir}", f"lookup-x+{tiny_model_dir}", "lookup--1+int8"):
        with pytest.raises(InvalidArgumentError, match="lookup-N\\+INNER with N >= 1"):
            make_drafter(spec, target, tok)
    with pytest.raises(InvalidArgumentError, match="max_lookup"):
        LookupThenModelDrafter(drafter.model, max_lookup=0)
    with pytest.raises(InvalidArgumentError, match="needs a draft model or an EAGLE-3 head"):
        LookupThenModelDrafter(drafter)  # lookup behind lookup
    with pytest.raises(InvalidArgumentError, match="needs a BiTA drafter"):
        LookupThenBiTADrafter(drafter.model)


def test_lookup_drafts_at_most_max_lookup_tokens(setup):
    tok, target = setup
    spy = SourceSpy(ModelDrafter(perturbed_copy(target, 0.05), tok), min_ngram=1, max_lookup=2)
    pipe = Pipeline(target, tok, drafter=spy)
    out = pipe.generate(PROMPTS[0], method=SpeculativeSampling(5), max_new_tokens=60)
    assert out.token_ids == pipe.generate(PROMPTS[0], method="plain", max_new_tokens=60).token_ids
    lookup = [int(proposed.max()) for source, _, proposed in spy.record if source == "lookup"]
    model = [int(proposed.max()) for source, _, proposed in spy.record if source == "model"]
    assert lookup and max(lookup) == 2 and max(model) > 2  # the cap is lookup's alone


def test_lookup_plus_bita_spelling(setup, tmp_path):
    tok, target = setup
    BiTAAdapter(model_signature(target), 4, 3, "deep").save_pretrained(tmp_path / "a")
    drafter = make_drafter(f"lookup+bita[2]:{tmp_path / 'a'}", target, tok)
    assert isinstance(drafter, LookupThenBiTADrafter) and drafter.bita.shape == TreeShape.parse("2", 3)
    assert drafter.proposes_trees and drafter.gives_embeddings and drafter.reserved_slots == 4
    # a block reaches BITA_LOOKUP_TOKENS lookup tokens and a mask after them, or the tree's depth and its mask
    assert drafter.max_lookup == BITA_LOOKUP_TOKENS and drafter.block_positions == BITA_LOOKUP_TOKENS + 1
    short = make_drafter(f"lookup-1+bita[straight]:{tmp_path / 'a'}", target, tok)
    assert short.max_lookup == 1 and short.block_positions == 3 + 3  # the straight chain's reach
    with pytest.raises(InvalidArgumentError, match="number of lookup tokens"):
        LookupThenBiTADrafter(drafter.bita, max_lookup=None)
    for prefix in ("int8:", "tree-2:", "lookup+int8:", "lookup-2+bf16:"):  # small models' options
        with pytest.raises(InvalidArgumentError, match="BiTA adapter takes a tree shape"):
            make_drafter(f"{prefix}bita[2]:{tmp_path / 'a'}", target, tok)


# lookup+eagle3: the head runs nothing on lookup steps and must still hold the settled text after them
EAGLE_TARGET = make_llama(len(make_tokenizer()), seed=0, layers=4)
EAGLE_PROMPT = [5, 9, 14, 5, 9, 14, 5, 9, 14, 5, 9]  # the tiny target repeats it for a while, then not


class NoAdopt(Eagle3Drafter):
    """Negative control: takes lookup's tokens for its own last drafts."""

    def adopt(self, tokens):
        pass


def head_chains_after_lookup(head_drafter) -> tuple[list[tuple[list[int], list[int]]], list[int]]:
    """Greedy SpS (γ 3, 80 tokens) with lookup+``head_drafter``: at each step the head drafts, the text
    settled so far and the head's chain; and, per head step, the lookup tokens kept since the last one."""
    combined = LookupThenModelDrafter(head_drafter, min_ngram=1)
    records, kept_before, kept, lookups = [], [], [0], [0]
    propose, combined_propose, update = head_drafter.propose, combined.propose, combined.update

    def recording(gamma, sampling, draws, *, min_confidence=0.0):
        draft = propose(gamma, sampling, draws, min_confidence=min_confidence)
        if gamma:
            records.append((list(combined.history[0].tokens), chain_of(draft)))
            kept_before.append(kept[0])
            kept[0] = 0
        return draft

    def step_source(*args, **kwargs):
        lookups[0] = combined.lookup_steps
        return combined_propose(*args, **kwargs)

    def counting(feedback):
        if combined.lookup_steps > lookups[0]:  # a lookup step: the head drafted nothing
            kept[0] += int(feedback.num_accepted.sum())
        update(feedback)

    head_drafter.propose, combined.propose, combined.update = recording, step_source, counting
    request = Request([EAGLE_PROMPT], SamplingConfig(), StopCriteria(80), row_keys([0], 1))
    loop = SpeculativeSampling(3).loop(Engine(EAGLE_TARGET), combined, request)
    while loop.active:
        loop.step()
    return records, kept_before


def test_an_eagle3_head_behind_lookup_drafts_what_a_fresh_head_drafts_on_the_settled_text():
    records, kept_before = head_chains_after_lookup(make_eagle3(EAGLE_TARGET, seed=1))
    assert any(kept_before[1:]), "a head step after kept lookup tokens"
    for text, chain in records:
        assert chain == fresh_chain(make_eagle3(EAGLE_TARGET, seed=1), EAGLE_TARGET, text)[: len(chain)]
    # Negative control: a head that takes lookup's tokens for its own drafts falls out of step.
    base = make_eagle3(EAGLE_TARGET, seed=1)
    records, _ = head_chains_after_lookup(NoAdopt(base.head, base.embeddings))
    fresh = [fresh_chain(make_eagle3(EAGLE_TARGET, seed=1), EAGLE_TARGET, text) for text, _ in records]
    assert any(chain != f[: len(chain)] for (_, chain), f in zip(records, fresh, strict=True))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_lookup_then_eagle3_emits_plain_decodings_tokens(temperature, dynamic):
    head = make_eagle3(EAGLE_TARGET, seed=1)
    if dynamic:  # the head's dynamic tree on its steps, lookup's chain on the others
        head = Eagle3Drafter(head.head, head.embeddings, tree_width=2, dynamic=True)
    drafter = LookupThenModelDrafter(head)
    sampling = SamplingConfig(temperature=temperature)
    prompts = [EAGLE_PROMPT, EAGLE_PROMPT[3:]]
    outs = []
    for method, d in ((SpeculativeSampling(4), drafter), (PlainDecoding(), None)):
        request = Request(prompts, sampling, StopCriteria(32), row_keys([3, 4], 1))
        loop = method.loop(Engine(EAGLE_TARGET), d, request)
        while loop.active:
            loop.step()
        outs.append(loop.result().tokens)
    assert outs[0] == outs[1]
    assert drafter.lookup_steps > 0 and drafter.model_steps > 0


def test_lookup_plus_eagle3_spelling(tmp_path):
    head = make_eagle3_head(EAGLE_TARGET)
    save_head(head, tmp_path / "head", {"name_or_path": "tiny", "architectures": []})
    drafter = make_drafter(f"lookup+int8:eagle3:{tmp_path / 'head'}", EAGLE_TARGET, None)
    assert isinstance(drafter, LookupThenModelDrafter) and isinstance(drafter.model, Eagle3Drafter)
    assert drafter.target_hidden_layers == head.aux_layers
    tree = make_drafter(f"lookup+tree-2:eagle3:{tmp_path / 'head'}", EAGLE_TARGET, None)
    assert tree.proposes_trees and tree.model.tree_width == 2
    dynamic = make_drafter(f"lookup+dtree-3:eagle3:{tmp_path / 'head'}", EAGLE_TARGET, None)
    assert dynamic.proposes_trees and dynamic.model.dynamic and dynamic.model.tree_width == 3


class Asked(FixedGamma):
    """γ 3 every step; records the γ each step it was used for asked (0: a plain step)."""

    def __init__(self):
        super().__init__(3)
        self.asked = []

    def update(self, step):
        self.asked.append(step.asked)


class Liar(LookupThenModelDrafter):
    """Negative control: names the other source than the one that drafts."""

    def next_source(self):
        return {"lookup": "model", "model": "lookup"}[super().next_source()]


@pytest.mark.parametrize("kind", [LookupThenModelDrafter, Liar])
def test_lookup_and_the_model_each_have_their_own_gamma_policy(setup, kind):
    """Lookup's acceptance is not the model's: each source's steps go to its own policy."""
    tok, target = setup
    drafter = kind(ModelDrafter(perturbed_copy(target, 0.5), tok), min_ngram=1)
    prompt = tok.encode(PROMPTS[0], add_special_tokens=False)
    request = Request([prompt], SamplingConfig(), StopCriteria(60), row_keys([0], 1))
    loop = SpeculativeSampling(Asked()).loop(Engine(target), drafter, request)
    while loop.active:
        loop.step()
    assert set(loop.policies) == {"lookup", "model"}
    drafted = {source: sum(a > 0 for a in policy.asked) for source, policy in loop.policies.items()}
    honest = drafted == {"lookup": drafter.lookup_steps, "model": drafter.model_steps}
    assert honest == (kind is LookupThenModelDrafter)


class PrefixHistory(LookupThenModelDrafter):
    """Negative control: extends its lookup history with the first accepted nodes, not the tree's path."""

    def update(self, feedback):
        super().update(Feedback(feedback.num_accepted, feedback.next_token, feedback.target, None))


def run_checking_history(target, drafter, prompts, temperature):
    """SpS (γ 4, 40 tokens) with ``drafter`` (None: plain decoding); after each step, whether every running
    row's lookup history is its prompt and the tokens settled so far."""
    request = Request(prompts, SamplingConfig(temperature=temperature), StopCriteria(40), row_keys([3, 4], 1))
    method = PlainDecoding() if drafter is None else SpeculativeSampling(4)
    loop, in_step = method.loop(Engine(target), drafter, request), []
    while loop.active:
        loop.step()
        if drafter is not None:
            held = [h.tokens for h in drafter.history]
            in_step.append(held == [list(prompts[r]) + loop.rows.tokens[r] for r in loop.active])
    return loop.result().tokens, in_step


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_lookup_then_a_tree_model_emits_plain_decodings_tokens_and_keeps_the_settled_text(setup, temperature):
    """Model steps verify the model's tree, lookup steps a chain: the tokens are plain decoding's, and the
    lookup history (and so later lookup drafts) holds exactly the settled text, siblings that won
    included; a history that reads the first accepted nodes instead of the tree's path is caught."""
    tok, target = setup
    prompts = [tok.encode(p, add_special_tokens=False) for p in PROMPTS]
    draft = perturbed_copy(target, 0.5)
    drafter = LookupThenModelDrafter(ModelDrafter(draft, tok, tree_width=2))
    tokens, in_step = run_checking_history(target, drafter, prompts, temperature)
    assert tokens == run_checking_history(target, None, prompts, temperature)[0]
    assert drafter.lookup_steps > 0 and drafter.model_steps > 0 and all(in_step)
    if temperature == 0:  # greedy, siblings win here (14 times): the control's history goes wrong
        _, control = run_checking_history(
            target, PrefixHistory(ModelDrafter(draft, tok, tree_width=2)), prompts, temperature
        )
        assert not all(control)
