"""BiTA decoding is lossless: for every tree shape and prompt design, greedy output equals plain greedy
output and seeded sampled output equals plain sampled output (coupled walk); the rejection rule over
trees runs too. Untrained adapters on tiny models: what is checked is the machinery (mask groups,
reserved prompt slots, keeping a path), which must be exact whatever the adapter guesses."""

from dataclasses import replace

import pytest
import torch
from decoding_cases import PROMPTS

from specdec.decoders import BiLD, Request, SpeculativeSampling, StopCriteria
from specdec.drafters.bita import BiTADrafter, TreeShape
from specdec.drafters.combined import LookupThenBiTADrafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, row_keys
from tiny import make_gpt2, make_llama, make_tokenizer

SHAPES = ["straight", "efficient", "full-2", "3,2"]
KINDS = {"deep": 4, "shallow": 4, "none": 0}
SAMPLING = dict(temperature=1.0, top_p=0.9, seed=1234)


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def target(request, tok):
    make = make_llama if request.param == "llama" else make_gpt2
    return make(len(tok), seed=0, layers=4)


@pytest.fixture(scope="module")
def plain(target, tok):
    pipe = Pipeline(target, tok)
    return {
        "greedy": pipe.generate(PROMPTS, method="plain", max_new_tokens=24),
        "sampled": pipe.generate(PROMPTS, method="plain", max_new_tokens=24, **SAMPLING),
    }


def adapter_for(target, kind: str, seed: int = 0, masks: int = 3) -> BiTAAdapter:
    torch.manual_seed(seed)
    return BiTAAdapter(model_signature(target), KINDS[kind], masks, kind).eval()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", list(KINDS))
def test_greedy_and_seeded_sampled_output_equal_plain(target, tok, plain, kind, shape):
    pipe = Pipeline(target, tok, drafter=BiTADrafter(adapter_for(target, kind), shape))
    method = SpeculativeSampling(6)
    greedy = pipe.generate(PROMPTS, method=method, max_new_tokens=24)
    assert greedy.token_ids == plain["greedy"].token_ids
    assert greedy.finish_reasons == plain["greedy"].finish_reasons
    assert greedy.stats.target_calls <= plain["greedy"].stats.target_calls
    sampled = pipe.generate(PROMPTS, method=method, max_new_tokens=24, **SAMPLING)
    assert sampled.token_ids == plain["sampled"].token_ids


def test_rejection_rule_over_trees_is_greedy_exact_and_seeded(target, tok, plain):
    """Greedy: exact. Sampled: the law is the sampler's (tests/sampling/test_tree.py); here, that the
    decoder runs it end to end with keyed randomness: same seed, same text."""
    pipe = Pipeline(target, tok, drafter=BiTADrafter(adapter_for(target, "deep"), "full-2"))
    method = SpeculativeSampling(6, "rejection")
    assert pipe.generate(PROMPTS, method=method, max_new_tokens=24).token_ids == plain["greedy"].token_ids
    first = pipe.generate(PROMPTS, method=method, max_new_tokens=24, **SAMPLING)
    again = pipe.generate(PROMPTS, method=method, max_new_tokens=24, **SAMPLING)
    assert first.token_ids == again.token_ids
    assert [len(ids) for ids in first.token_ids] == [24, 24] or "length" not in first.finish_reasons


class OracleBiTA(BiTADrafter):
    """Mask outputs replaced by logits pointing at the tokens plain decoding emits (batch of one)."""

    def __init__(self, adapter, shape, truth):
        super().__init__(adapter, shape)
        self.truth = truth

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.emitted = 0

    def update(self, feedback):
        super().update(feedback)
        self.emitted += int(feedback.num_accepted[0]) + 1
        if self.mask_logits is not None:
            logits = torch.full_like(self.mask_logits, -1e4)
            for i in range(self.num_masks):
                if self.emitted + i < len(self.truth):
                    logits[:, i, self.truth[self.emitted + i]] = 0.0
            self.mask_logits = logits


@pytest.mark.parametrize("gamma", [6, "adaptive"])  # a tree drafter sizes its own block either way
@pytest.mark.parametrize("shape", SHAPES)
def test_paths_are_kept_deep_when_the_masks_guess_right(target, tok, plain, shape, gamma):
    """With masks that guess right, whole paths are accepted (more than 2 tokens per target call, over
    the plain first step and the short steps at the token budget) and the output is still exactly
    plain decoding's."""
    truth = plain["greedy"].token_ids[0]
    pipe = Pipeline(target, tok, drafter=OracleBiTA(adapter_for(target, "deep"), shape, truth))
    out = pipe.generate(PROMPTS[:1], method=SpeculativeSampling(gamma), max_new_tokens=24)
    assert out.token_ids[0] == truth
    assert out.stats.accepted_tokens >= out.stats.target_calls  # over 2 tokens per target call


class RecordingBiTA(BiTADrafter):
    """Keeps every pass's width and mask outputs."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.widths, self.outputs = [], []

    def update(self, feedback):
        super().update(feedback)
        self.widths.append(feedback.target.logits.shape[1])
        self.outputs.append(self.mask_logits)


def test_a_shallow_tree_runs_only_the_masks_it_reads(target, tok):
    """Mask d drafts depth d and sees only earlier masks, so a tree d deep runs d masks a group: its
    full blocks are 1 + N + (N + 1)·d wide (shorter near the token budget), and those masks' outputs
    are the deeper tree's first d."""
    adapter = adapter_for(target, "deep")
    runs = {}
    for shape in ("1", "1,1", "straight"):
        drafter = RecordingBiTA(adapter, shape)
        Pipeline(target, tok, drafter=drafter).generate(PROMPTS[:1], method="sps", max_new_tokens=24)
        runs[shape] = drafter
    assert runs["1"].block_positions == 2 and runs["straight"].block_positions == 6
    assert max(runs["1"].widths) == 1 + 1 + 2 * 1
    assert max(runs["1,1"].widths) == 1 + 2 + 3 * 2
    assert max(runs["straight"].widths) == 1 + 3 + 4 * 3
    first = {shape: run.outputs[0] for shape, run in runs.items()}  # after the prefill's pass: no tree yet
    assert first["1"].shape[1] == 1 and first["1,1"].shape[1] == 2
    torch.testing.assert_close(first["1"], first["straight"][:, :1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(first["1,1"], first["straight"][:, :2], rtol=1e-5, atol=1e-5)


def test_bild_refuses_tree_drafts_and_shapes_are_checked(target, tok):
    drafter = BiTADrafter(adapter_for(target, "deep"), "efficient")
    pipe = Pipeline(target, tok, drafter=drafter)
    with pytest.raises(InvalidArgumentError, match="trees"):
        pipe.generate(PROMPTS, method=BiLD(0.3, 0.0, 4), max_new_tokens=4)
    with pytest.raises(InvalidArgumentError, match="tree shape"):
        TreeShape.parse("bushy", 3)
    with pytest.raises(InvalidArgumentError, match="mask tokens"):
        BiTADrafter(adapter_for(target, "deep", masks=2), "5,4,3")
    assert TreeShape.parse("efficient", 3).nodes(3)[0] == (-1,) * 5 + (0,) * 4 + (5,) * 3
    assert len(TreeShape.parse("full-2", 3).nodes(3)[0]) == 2 + 4 + 8


# -- lookup+bita: prompt lookup's chain carries the adapter's mask groups --------------------------------
# Repeated phrases give lookup matches in every row (a lookup step needs one in each).
LOOKUP_PROMPTS = [
    "the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the lazy dog. the quick",
    "def add(a, b): return a + b\ndef add(a, b): return a",
]


@pytest.mark.parametrize("shape", ["2", "straight", "efficient"])
@pytest.mark.parametrize("kind", ["deep", "none"])
def test_lookup_then_bita_emits_plain_decodings_text(target, tok, kind, shape):
    drafter = LookupThenBiTADrafter(BiTADrafter(adapter_for(target, kind), shape), min_ngram=1)
    pipe, baseline = Pipeline(target, tok, drafter=drafter), Pipeline(target, tok)
    for sampling in ({}, SAMPLING):
        out = pipe.generate(LOOKUP_PROMPTS, method=SpeculativeSampling(6), max_new_tokens=32, **sampling)
        plain = baseline.generate(LOOKUP_PROMPTS, method="plain", max_new_tokens=32, **sampling)
        assert out.token_ids == plain.token_ids
        assert out.stats.target_calls <= plain.stats.target_calls
    assert drafter.lookup_steps > 0 and drafter.model_steps > 0  # both sources drafted


class AfterLookup(LookupThenBiTADrafter):
    """Records, after every lookup step, the text up to the last kept token and the mask outputs the
    next step drafts from; ``anchor_pending``: a negative control that takes the mask group after the
    pending token whatever was kept."""

    anchor_pending = False

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.records = []

    def propose(self, gamma, sampling, draws, *, min_confidence=0.0):
        before = self.lookup_steps
        draft = super().propose(gamma, sampling, draws, min_confidence=min_confidence)
        self.was_lookup = self.lookup_steps > before
        return draft

    def update(self, feedback):
        if self.was_lookup and self.anchor_pending:
            feedback = replace(feedback, path=None)  # a chain's kept nodes, but BiTA's anchor at 0
        super().update(feedback)
        if self.was_lookup:
            kept = int(feedback.num_accepted[0])
            self.records.append((list(self.history[0].tokens[:-1]), kept, self.bita.mask_logits[0].clone()))


def first_mask_outputs(target, adapter, shape: str, context: list[int]) -> torch.Tensor:
    """A fresh BiTA drafter's mask outputs after its first pass over ``context`` (the group after the
    last token: the reference for what a step that kept tokens up to there should draft from)."""
    drafter, engine = BiTADrafter(adapter, shape), Engine(target)
    drafter.attach(engine)
    request = Request([context], SamplingConfig(), StopCriteria(8), row_keys([0], 1))
    SpeculativeSampling(6).loop(engine, drafter, request).step()
    return drafter.mask_logits[0]


@pytest.mark.parametrize("anchor_pending", [False, True])
def test_after_a_lookup_step_the_next_tree_comes_from_the_last_kept_token(tok, anchor_pending):
    """Whatever a lookup step kept, the next step's candidates are the mask outputs a fresh pass over the
    text up to the last kept token gives; the negative control (the group after the pending token)
    must differ once a step kept some lookup tokens. (The tiny Llama repeats itself, so lookup steps keep
    0 to 4 tokens; the tiny GPT-2 does not.)"""
    target = make_llama(len(tok), seed=0, layers=4)
    adapter = adapter_for(target, "deep")
    drafter = AfterLookup(BiTADrafter(adapter, "straight"), min_ngram=1)
    drafter.anchor_pending = anchor_pending
    Pipeline(target, tok, drafter=drafter).generate(LOOKUP_PROMPTS[:1], method="sps", max_new_tokens=40)
    assert any(kept for _, kept, _ in drafter.records), "no lookup step kept a token"
    agree = [
        torch.allclose(outputs, first_mask_outputs(target, adapter, "straight", context), atol=1e-4)
        for context, kept, outputs in drafter.records
    ]
    if anchor_pending:
        assert not all(agree)
    else:
        assert all(agree)


class ChainLengths(LookupThenBiTADrafter):
    """Records each lookup step's chain length and the rows' own lookup lengths before it."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.steps = []

    def propose(self, gamma, sampling, draws, *, min_confidence=0.0):
        before, own = self.lookup_steps, self.lookup(gamma - self.bita.num_masks)
        draft = super().propose(gamma, sampling, draws, min_confidence=min_confidence)
        if self.lookup_steps > before:
            self.steps.append((draft.row_lengths().tolist(), draft.gamma, own.row_lengths().tolist()))
        return draft


def test_a_batch_shares_its_shortest_lookup_chain(tok):
    """Each lookup token costs every row a position and a mask: the rows of a lookup step propose the
    shortest row's chain, all of it (what they report drafting)."""
    target = make_llama(len(tok), seed=0, layers=4)
    drafter = ChainLengths(BiTADrafter(adapter_for(target, "deep"), "2"), min_ngram=1, max_lookup=16)
    pipe = Pipeline(target, tok, drafter=drafter)
    out = pipe.generate(LOOKUP_PROMPTS, method="sps", max_new_tokens=40)
    assert (
        out.token_ids
        == Pipeline(target, tok).generate(LOOKUP_PROMPTS, method="plain", max_new_tokens=40).token_ids
    )
    for reported, width, own in drafter.steps:
        assert reported == [width] * len(own) and width == min(own)
    assert any(len(set(own)) > 1 for _, _, own in drafter.steps)  # rows whose own chains differed
