import math

import pytest
import torch

from specdec.decoders import BildConfig
from specdec.drafters import (
    EarlyExitDrafter,
    PromptLookupDrafter,
    TruncatedDrafter,
    lookup_continuation,
    make_drafter,
    reduced_precision_copy,
    truncated_copy,
)
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig
from tiny import make_llama, make_tokenizer


def test_lookup_prefers_longest_most_recent_match():
    history = [1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 2, 3]
    # suffix [2, 3] last occurred at index 5 → continuation starts at 7
    assert lookup_continuation(history, max_ngram=2, min_ngram=1, length=3) == [7, 8, 5]
    # only the 1-gram [3] matches when max_ngram=1; most recent earlier 3 is at index 6
    assert lookup_continuation(history, max_ngram=1, min_ngram=1, length=2) == [7, 8]
    assert lookup_continuation([4, 5, 6], max_ngram=3, min_ngram=1, length=4) == []


def test_prompt_lookup_drafter_proposes_and_tracks_history():
    drafter = PromptLookupDrafter(max_ngram=2)
    drafter.begin([[1, 2, 3, 4, 1, 2], [7, 8]], capacity=64)
    draft = drafter.propose(3, SamplingConfig(), None)
    assert draft.tokens[0].tolist() == [3, 4, 1]
    assert draft.row_lengths().tolist() == [3, 0]
    drafter.update(torch.tensor([2, 0]), torch.tensor([9, 5]))
    assert drafter.history == [[1, 2, 3, 4, 1, 2, 3, 4, 9], [7, 8, 5]]


def test_derived_drafts_leave_the_target_untouched():
    tok = make_tokenizer()
    target = make_llama(len(tok), layers=4)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    int8, bf16 = reduced_precision_copy(target, "int8"), reduced_precision_copy(target, "bf16")
    short = truncated_copy(target, 2)
    assert type(target.lm_head) is torch.nn.Linear and type(int8.lm_head) is not torch.nn.Linear
    assert bf16.lm_head.weight.dtype == torch.bfloat16
    assert short.config.num_hidden_layers == 2 and len(short.model.layers) == 2
    assert target.config.num_hidden_layers == 4 and len(target.model.layers) == 4
    assert short.model.embed_tokens.weight is target.model.embed_tokens.weight  # shared, not copied
    after = target.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    x = torch.tensor([[5, 6, 7]])
    with torch.inference_mode():
        assert short(x).logits.shape == target(x).logits.shape
        torch.testing.assert_close(int8(x).logits, target(x).logits, atol=0.5, rtol=0.1)


def test_early_exit_drafts_what_a_separate_truncated_copy_drafts():
    """On the target's cache the exit sees the same first-layer states a truncated copy computes itself."""
    tok = make_tokenizer()
    target = make_llama(len(tok), seed=0, layers=4)
    prompts = ["the quick brown fox jumps over", "def add(a, b):"]
    bild = BildConfig(fallback_threshold=0.0, rollback_threshold=math.inf, max_small_tokens=3)
    shared = Pipeline(target, tok, drafter=EarlyExitDrafter(target, 2)).generate(
        prompts, max_new_tokens=20, bild=bild
    )
    separate = Pipeline(target, tok, drafter=TruncatedDrafter(target, tok, 2)).generate(
        prompts, max_new_tokens=20, bild=bild
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
    engine.reset(1, 64)
    engine.prefill([prompt[:-1]])
    drafter.begin([prompt], 64)
    for min_confidence in (0.0, 1.0):  # drafting to γ, and stopping at once on fallback
        draft = drafter.propose(4, SamplingConfig(), None, min_confidence=min_confidence)
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
