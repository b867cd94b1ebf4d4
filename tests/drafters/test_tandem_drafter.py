"""Tandem + SPEED: the secondary's cache always holds the primary's states of settled tokens and its
own states of the current block, after partial acceptance, rollback and plain steps alike."""

import math

import pytest
import torch

from specdec.decoders import BiLD, SpeculativeSampling
from specdec.drafters.tandem import TandemDrafter
from specdec.errors import VocabularyMismatchError
from specdec.pipeline import Pipeline
from tiny import make_gpt2, make_llama, make_oracle_tandem, make_tandem, make_tokenizer, perturbed_copy


class FirstDraftSpy(TandemDrafter):
    """Records, at every step, how many tokens are settled and the secondary's logits for the first draft."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.steps, self.settled = [], [len(p) for p in prompts]

    def catch_up(self):
        logits = super().catch_up()
        self.steps.append((self.settled[0], logits[0].clone()))
        return logits

    def update(self, feedback):
        super().update(feedback)
        self.settled[0] += int(feedback.num_accepted[0]) + 1


METHODS = {
    "sps": SpeculativeSampling(3),  # an untrained secondary: every draft rejected
    "keep-all": BiLD(0.0, math.inf, 3),  # every draft kept
    "partial": BiLD(0.0, 5.8, 4),  # about half kept (d ≈ log V for random models)
    "fallback": BiLD(0.0039, 5.8, 4),  # near the median confidence: drafts stop early, last token fed
}


@pytest.mark.parametrize("make", [make_llama, make_gpt2], ids=["llama", "gpt2"])
@pytest.mark.parametrize("method", list(METHODS))
def test_every_draft_reads_the_primary_states_of_everything_settled(make, method):
    """At each step the first draft's logits equal the block-causal training pass whose block starts
    at the pending token: every earlier token read from the primary's (teacher-forced) states."""
    tok = make_tokenizer()
    primary = make(len(tok), seed=0, layers=4)
    tandem = make_tandem(primary)
    spy = FirstDraftSpy(tandem, tok)
    prompt = tok.encode("the quick brown fox jumps over the lazy dog")
    out = Pipeline(primary, tok, drafter=spy).generate(prompt, method=METHODS[method], max_new_tokens=20)
    sequence = torch.tensor([prompt + out.token_ids[0]])
    with torch.inference_mode():
        states = dict(enumerate(primary(sequence, output_hidden_states=True).hidden_states))
        every_position_its_own_block = torch.arange(sequence.shape[1])[None]
        reference = tandem(sequence, states, every_position_its_own_block)[0]
    assert len(spy.steps) > 3
    if method != "sps":
        assert out.stats.accepted_tokens > 0
    if method in ("partial", "fallback"):
        assert 0 < out.stats.rejections < out.stats.row_steps
    for settled, logits in spy.steps:
        torch.testing.assert_close(logits, reference[settled - 1], rtol=1e-4, atol=1e-4)


def test_a_secondary_for_another_primary_is_refused():
    tok = make_tokenizer()
    primary = make_llama(len(tok), seed=0, layers=4)
    other = make_llama(len(tok), seed=0, layers=3)
    with pytest.raises(VocabularyMismatchError, match="reads a primary"):
        Pipeline(other, tok, drafter=TandemDrafter(make_tandem(primary), tok))
    wider = perturbed_copy(primary, 0.1)
    Pipeline(wider, tok, drafter=TandemDrafter(make_tandem(primary), tok))  # same shape: accepted


@pytest.mark.parametrize("make", [make_llama, make_gpt2], ids=["llama", "gpt2"])
def test_a_secondary_that_is_the_primary_is_always_accepted(make):
    tok = make_tokenizer()
    primary = make(len(tok), seed=0, layers=3)
    pipe = Pipeline(primary, tok, drafter=TandemDrafter(make_oracle_tandem(primary), tok))
    prompts = ["the quick brown fox jumps over the lazy dog", "def add(a, b):"]
    out = pipe.generate(prompts, method=SpeculativeSampling(4), max_new_tokens=24)
    assert out.stats.acceptance_rate == 1.0 and out.stats.tokens_per_target_call > 4
    assert out.token_ids == pipe.generate(prompts, method="plain", max_new_tokens=24).token_ids
    # Negative control: the same secondary reading the wrong primary layers is not the primary.
    shifted = make_oracle_tandem(primary)
    shifted.layer_map = (1, 2, 3)
    off = Pipeline(primary, tok, drafter=TandemDrafter(shifted, tok)).generate(
        prompts, method=SpeculativeSampling(4), max_new_tokens=24
    )
    assert off.stats.acceptance_rate < 0.9


def test_a_cheaper_secondary_trimmed_head_and_int8_stays_lossless():
    """The oracle secondary with its head cut to the tokens the primary writes, and in int8: drafts come
    from the kept tokens only, are still mostly accepted, and the output is plain decoding's."""
    tok = make_tokenizer()
    primary = make_llama(len(tok), seed=0, layers=3)
    prompts = ["the quick brown fox jumps over the lazy dog", "def add(a, b):"]
    plain = Pipeline(primary, tok).generate(prompts, method="plain", max_new_tokens=24).token_ids
    written = sorted({t for row in plain for t in row} | {t for p in prompts for t in tok.encode(p)})
    keep = torch.tensor(written)
    for options in ({"vocab": keep}, {"int8": True}, {"vocab": keep, "int8": True}):
        drafter = TandemDrafter(make_oracle_tandem(primary), tok, **options)
        pipe = Pipeline(primary, tok, drafter=drafter)
        out = pipe.generate(prompts, method=SpeculativeSampling(4), max_new_tokens=24)
        assert out.token_ids == plain, options
        assert out.stats.acceptance_rate > (0.99 if "int8" not in options else 0.5), options
    narrow = TandemDrafter(make_oracle_tandem(primary), tok, vocab=keep[:3])  # negative control
    out = Pipeline(primary, tok, drafter=narrow).generate(
        prompts, method=SpeculativeSampling(4), max_new_tokens=24
    )
    assert out.token_ids == plain and out.stats.acceptance_rate < 0.5


def test_cheap_tandem_spellings_build_a_trimmed_int8_secondary(tmp_path):
    from collections import Counter

    from specdec.drafters import make_drafter
    from specdec.drafters.factory import eos_ids
    from specdec.errors import InvalidArgumentError
    from specdec.models.draft_vocab import TrimmedHead, write_vocab_file

    tok = make_tokenizer()
    primary = make_llama(len(tok), seed=0, layers=4)
    make_tandem(primary).save_pretrained(tmp_path)
    write_vocab_file(tmp_path, Counter({5: 9, 7: 4, 11: 2, 13: 1}), {"answers": ["test"]})
    drafter = make_drafter(f"int8:vocab-2:tandem:{tmp_path}", primary, tok)
    engine_model = drafter.engine.model
    head = engine_model.get_output_embeddings()
    assert isinstance(head, TrimmedHead)
    assert head.keep.tolist() == sorted({5, 7, *eos_ids(primary)})  # the 2 most written, and EOS
    quantized = [m for m in engine_model.modules() if "quantized" in type(m).__module__]
    assert quantized, "int8: the secondary's linears are dynamically quantised"
    with pytest.raises(InvalidArgumentError, match="vocab-N: and int8: only"):
        make_drafter(f"tree-2:tandem:{tmp_path}", primary, tok)
