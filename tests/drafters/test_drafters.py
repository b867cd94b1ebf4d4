import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec.decoders import BiLD, SpeculativeSampling
from specdec.drafters import (
    EarlyExitDrafter,
    Feedback,
    PromptLookupDrafter,
    TruncatedDrafter,
    lookup_continuation,
    make_drafter,
)
from specdec.drafters.prompt_lookup import NgramIndex
from specdec.engine import Engine, ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from specdec.sampling import KeyedDraws, SamplingConfig
from tiny import make_llama, make_tokenizer

GREEDY, NO_DRAWS = SamplingConfig(), KeyedDraws([0, 1], [0, 0])


def test_lookup_prefers_longest_most_recent_match():
    history = [1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 2, 3]
    # suffix [2, 3] last occurred at index 5 → continuation starts at 7
    assert lookup_continuation(history, max_ngram=2, min_ngram=1, length=3) == [7, 8, 5]
    # only the 1-gram [3] matches when max_ngram=1; most recent earlier 3 is at index 6
    assert lookup_continuation(history, max_ngram=1, min_ngram=1, length=2) == [7, 8]
    assert lookup_continuation([4, 5, 6], max_ngram=3, min_ngram=1, length=4) == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 4), max_size=12), min_size=1, max_size=6),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 5),
)
def test_the_ngram_index_finds_what_a_scan_of_the_context_finds(chunks, max_ngram, min_ngram, length):
    """Grown chunk by chunk (as decoding extends a row), the index answers every query as the scan does:
    the longest suffix n-gram that occurred before, its most recent occurrence, what followed it."""
    index, history = NgramIndex([], max_ngram), []
    for chunk in chunks:
        index.extend(chunk)
        history += chunk
        for top in range(1, max_ngram + 1):
            low = min(min_ngram, top)
            assert index.continuation(top, low, length) == lookup_continuation(history, top, low, length)


def prompt_continuation(history, prompt_length, max_ngram, min_ngram, length):
    """The scan a prompt-only index answers: occurrences continued inside the prompt, cut at its end."""
    size = len(history)
    for n in range(min(max_ngram, size - 1), min_ngram - 1, -1):
        for start in range(min(size, prompt_length) - n - 1, -1, -1):
            if history[start : start + n] == history[size - n :]:
                return history[start + n : min(start + n + length, prompt_length)]
    return []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 4), max_size=12),
    st.lists(st.lists(st.integers(0, 4), max_size=6), max_size=4),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 5),
)
def test_a_prompt_only_index_copies_from_the_prompt_alone(prompt, chunks, max_ngram, min_ngram, length):
    """As the answer grows, its suffix is looked up in the prompt only, and what is copied stops where the
    prompt does."""
    index, history = NgramIndex(prompt, max_ngram, prompt_only=True), list(prompt)
    for chunk in [[], *chunks]:
        index.extend(chunk)
        history += chunk
        for top in range(1, max_ngram + 1):
            low = min(min_ngram, top)
            expected = prompt_continuation(history, len(prompt), top, low, length)
            assert index.continuation(top, low, length) == expected


def test_only_the_full_index_copies_the_answers_own_phrases():
    """The loop a lossy rule keeps: an answer whose last token it wrote before is offered its own next
    tokens again by the full index; the prompt-only one finds nothing to copy."""
    prompt, answer = [1, 2, 3], [7, 8, 9, 7]
    full, prompt_only = NgramIndex(prompt, 3), NgramIndex(prompt, 3, prompt_only=True)
    for index in (full, prompt_only):
        index.extend(answer)
    assert full.continuation(3, 1, 3) == [8, 9, 7]
    assert prompt_only.continuation(3, 1, 3) == []
    assert make_drafter("prompt-only-lookup", None, None).name == "prompt-only-lookup"


def test_prompt_lookup_drafter_proposes_and_tracks_history():
    drafter = PromptLookupDrafter(max_ngram=2)
    drafter.begin([[1, 2, 3, 4, 1, 2], [7, 8]], None)
    draft = drafter.propose(3, GREEDY, NO_DRAWS)
    assert draft.tokens[0].tolist() == [3, 4, 1]
    assert draft.row_lengths().tolist() == [3, 0]
    logits = ExtendOutput(logits=torch.zeros(2, 4, 10))
    drafter.update(Feedback(torch.tensor([2, 0]), torch.tensor([9, 5]), logits))
    assert [h.tokens for h in drafter.history] == [[1, 2, 3, 4, 1, 2, 3, 4, 9], [7, 8, 5]]
    assert drafter.propose(0, GREEDY, NO_DRAWS).gamma == 0  # a plain step: nothing proposed


def test_early_exit_drafts_what_a_separate_truncated_copy_drafts():
    """On the target's cache the exit sees the same first-layer states a truncated copy computes itself."""
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=4)
    prompts = ["the quick brown fox jumps over", "def add(a, b):"]
    bild = BiLD(fallback_threshold=0.0, rollback_threshold=math.inf, max_small_tokens=3)
    shared = Pipeline(target, tok, drafter=EarlyExitDrafter(target, 2)).generate(
        prompts, method=bild, max_new_tokens=20
    )
    separate = Pipeline(target, tok, drafter=TruncatedDrafter(target, tok, 2)).generate(
        prompts, method=bild, max_new_tokens=20
    )
    assert shared.token_ids == separate.token_ids
    assert shared.stats.accepted_tokens == shared.stats.proposed_tokens > 0


def test_early_exit_releases_its_slots_before_verification():
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=4)
    engine = Engine(target)
    drafter = EarlyExitDrafter(target, 1)
    drafter.attach(engine)
    prompt = tok.encode("the quick brown fox")
    engine.start([prompt], extra_slots=64)
    drafter.begin([prompt], None)
    for min_confidence in (0.0, 1.0):  # drafting to γ, and stopping at once on fallback
        draft = drafter.propose(4, GREEDY, NO_DRAWS, min_confidence=min_confidence)
        assert draft.gamma == (4 if min_confidence == 0 else 0)
        assert engine.num_tokens.tolist() == [len(prompt) - 1]


def test_early_exit_is_bound_to_its_target():
    tok = make_tokenizer()
    target, other = make_llama(len(tok), seed=0, layers=4), make_llama(len(tok), seed=1, layers=4)
    with pytest.raises(InvalidArgumentError, match="own target"):
        Pipeline(other, tok, drafter=EarlyExitDrafter(target, 2))
    with pytest.raises(InvalidArgumentError, match="num_layers"):
        EarlyExitDrafter(target, 4)
    with pytest.raises(InvalidArgumentError, match="early-exit-N"):
        make_drafter("early-exit-x", target, tok)


def test_with_drafter_shares_the_engine_and_leaves_the_original_alone():
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=4)
    base = Pipeline(target, tok)
    lookup = base.with_drafter(PromptLookupDrafter())
    exit_ = base.with_drafter(EarlyExitDrafter(target, 2))
    assert base.drafter is None and lookup.engine is base.engine is exit_.engine
    assert exit_.drafter.engine is base.engine  # attached to the shared engine
    plain = base.generate("the quick brown fox", max_new_tokens=12)
    for pipe in (lookup, exit_):
        assert pipe.generate("the quick brown fox", max_new_tokens=12).token_ids == plain.token_ids
    assert base.generate("the quick brown fox", max_new_tokens=12).stats.proposed_tokens == 0
    with pytest.raises(InvalidArgumentError, match="own target"):
        base.with_drafter(EarlyExitDrafter(make_llama(len(tok), seed=1, layers=4), 2))
    with pytest.raises(InvalidArgumentError, match="Drafter"):
        base.with_drafter("prompt-lookup")


class HiddenStateSpy(PromptLookupDrafter):
    """A drafter that asks for the target's hidden states and records what each pass hands it."""

    target_hidden_layers = (0, 2)

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.prompts, self.prefill, self.feedback = prompts, prefill, []

    def update(self, feedback):
        super().update(feedback)
        self.feedback.append(feedback)


@pytest.mark.parametrize("method", [SpeculativeSampling(3), BiLD(0.0, 0.0, 3)])
def test_the_target_pass_reaches_the_drafter(method):
    """Prefill and every verify pass hand the drafter the target's logits and the hidden states it
    asked for; for the tokens the target kept they are the model's own values over the final text."""
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=2)
    spy = HiddenStateSpy()
    # Text, its greedy continuation, the text again: prompt lookup proposes tokens the target accepts.
    head = tok.encode("the quick brown")
    prompt = head + Pipeline(target, tok).generate(head, max_new_tokens=6).token_ids[0] + head
    out = Pipeline(target, tok, drafter=spy).generate(prompt, method=method, max_new_tokens=12)
    sequence = prompt + out.token_ids[0]
    with torch.inference_mode():
        reference = target(torch.tensor([sequence]), output_hidden_states=True)
    n = len(prompt) - 1
    for layer in (0, 2):
        torch.testing.assert_close(spy.prefill.hidden_states[layer][0], reference.hidden_states[layer][0, :n])
    assert out.stats.accepted_tokens > 0 and len(spy.feedback) == out.stats.target_calls
    position = n  # the pending token's position
    for feedback in spy.feedback:
        kept = 1 + int(feedback.num_accepted[0])  # the pending token and the accepted draft tokens
        span = slice(position, position + kept)
        for layer in (0, 2):
            got = feedback.target.hidden_states[layer][0, :kept]
            torch.testing.assert_close(got, reference.hidden_states[layer][0, span], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            feedback.target.logits[0, :kept], reference.logits[0, span], rtol=1e-5, atol=1e-5
        )
        position += kept
