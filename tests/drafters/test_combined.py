"""lookup+MODEL: prompt lookup where the context has a match, the draft model elsewhere."""

import copy

import pytest
import torch

from specdec.decoders import SpeculativeSampling
from specdec.drafters import LookupThenModelDrafter, ModelDrafter, make_drafter
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from tiny import make_llama, make_tokenizer, perturbed_copy

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
    with pytest.raises(InvalidArgumentError, match="chain-drafting model"):
        make_drafter(f"lookup+tree-2:{tiny_model_dir}", target, tok)
    with pytest.raises(InvalidArgumentError, match="min_ngram"):
        LookupThenModelDrafter(drafter.model, min_ngram=0)
