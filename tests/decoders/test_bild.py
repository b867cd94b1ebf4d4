"""Big Little Decoder: policies on hand-built logits, decoder invariants on tiny models."""

import itertools
import math

import pytest
import torch

from conftest import DRAFTERS, PROMPTS
from specdec.decoders import BildConfig, StopCriteria, bild_generate
from specdec.decoders.bild import bild_verify, first_rollback, rollback_distance
from specdec.drafters import Draft, ModelDrafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from specdec.sampling import SamplingConfig, max_probability
from tiny import make_llama

GREEDY = SamplingConfig()


def _logits_from_probs(rows: list[list[list[float]]]) -> torch.Tensor:
    """[B, T, V] logits whose softmax is exactly the given distributions (up to rounding)."""
    return torch.tensor(rows, dtype=torch.float64).log()


# -- fallback ---------------------------------------------------------------------------------------
def test_fallback_fires_strictly_below_the_threshold():
    logits = _logits_from_probs([[[0.5, 0.3, 0.2]], [[0.9, 0.05, 0.05]]])[:, 0]
    confidence = max_probability(logits)
    assert confidence.tolist() == pytest.approx([0.5, 0.9], abs=1e-12)
    at = float(confidence[0])
    assert not bool(max_probability(logits)[0] < at)  # equal to α_FB: the small model keeps going
    above = math.nextafter(at, 1.0)
    assert (max_probability(logits) < above).tolist() == [True, False]


def test_drafter_stops_each_row_before_its_first_unconfident_token(tok):
    """Lengths equal the first position whose confidence is below α_FB, recomputed by teacher forcing."""
    model = make_llama(len(tok), seed=3)
    prompts = [tok.encode(p) for p in PROMPTS]
    drafter = ModelDrafter(model, tok)
    drafter.begin(prompts, capacity=128)
    free = drafter.propose(8, GREEDY, None)
    confidences = []
    for row, prompt in enumerate(prompts):
        ids = torch.tensor([prompt + free.tokens[row].tolist()])
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : len(prompt) - 1 + 8]
        confidences.append(max_probability(logits))
    values = sorted(set(torch.cat(confidences).tolist()))
    # Thresholds halfway between well-separated confidences, so rounding can't flip a comparison.
    gaps = [(low, high) for low, high in itertools.pairwise(values) if high - low > 1e-4]
    assert len(gaps) >= 5
    for low, high in gaps:
        threshold = (low + high) / 2
        drafter.begin(prompts, capacity=128)
        draft = drafter.propose(8, GREEDY, None, min_confidence=threshold)
        for row, conf in enumerate(confidences):
            below = (conf < threshold).nonzero()
            expected = int(below[0]) if len(below) else 8
            assert int(draft.row_lengths()[row]) == expected
            assert draft.tokens[row, :expected].tolist() == free.tokens[row, :expected].tolist()


# -- rollback ---------------------------------------------------------------------------------------
def test_rollback_distance_is_the_cross_entropy_of_the_small_token():
    logits = _logits_from_probs([[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]])
    d = rollback_distance(torch.tensor([[1, 2]]), logits)
    assert d[0].tolist() == pytest.approx([-math.log(0.2), -math.log(0.8)])


def test_rollback_at_exactly_the_first_offending_position():
    # Row 0: distances [0.36, 2.3, 0.1, 2.3] → with α_RB = 1.5 keep 1, replace position 1.
    # Row 1: proposed only 2 tokens, both fine → keep 2, the large model's token at position 2 follows.
    q = [
        [[0.7, 0.2, 0.1], [0.8, 0.1, 0.1], [0.05, 0.9, 0.05], [0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
        [[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.3, 0.3, 0.4], [0.3, 0.3, 0.4]],
    ]
    draft = Draft(tokens=torch.tensor([[0, 1, 1, 2], [1, 2, 0, 0]]), lengths=torch.tensor([4, 2]))
    result = bild_verify(draft, _logits_from_probs(q), BildConfig(0.0, 1.5), GREEDY, None)
    assert result.num_accepted.tolist() == [1, 2]
    assert result.next_tokens.tolist() == [0, 0]  # row 0: argmax at position 1; row 1: at position 2


def test_a_distance_equal_to_the_threshold_is_kept():
    q = [[[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]]
    draft = Draft(tokens=torch.tensor([[2]]))
    logits = _logits_from_probs(q)
    at = float(rollback_distance(draft.tokens, logits[:, :1]))
    sampling = SamplingConfig(temperature=1.0)  # the greedy agreement rule is off
    kept = bild_verify(draft, logits, BildConfig(0.0, at), sampling, torch.Generator().manual_seed(0))
    assert kept.num_accepted.tolist() == [1]
    rolled = bild_verify(draft, logits, BildConfig(0.0, math.nextafter(at, 0.0)), sampling, None)
    assert rolled.num_accepted.tolist() == [0]


def test_greedy_never_rolls_back_a_token_the_large_model_would_pick():
    q = [[[0.4, 0.3, 0.3], [0.34, 0.33, 0.33]]]  # token 0 is the argmax but d = 0.92 > α_RB
    draft = Draft(tokens=torch.tensor([[0]]))
    assert bild_verify(draft, _logits_from_probs(q), BildConfig(0.0, 0.5), GREEDY, None).num_accepted == 1


def test_first_rollback_respects_row_lengths():
    offending = torch.tensor([[False, False, True], [False, False, False], [True, False, False]])
    assert first_rollback(offending, torch.tensor([3, 1, 0])).tolist() == [2, 1, 0]


# -- decoder invariants -----------------------------------------------------------------------------
@pytest.mark.parametrize("drafter_name", list(DRAFTERS))
@pytest.mark.parametrize(("fallback", "cap"), [(0.0, 10), (0.3, 4), (0.9, 1)])
def test_rollback_threshold_zero_greedy_equals_plain_greedy(target, tok, drafter_name, fallback, cap):
    pipe = Pipeline(target, tok, drafter=DRAFTERS[drafter_name](target, tok))
    plain = pipe.generate(PROMPTS, max_new_tokens=24, speculative=False)
    bild = pipe.generate(PROMPTS, max_new_tokens=24, bild=BildConfig(fallback, 0.0, cap))
    assert bild.token_ids == plain.token_ids
    assert bild.finish_reasons == plain.finish_reasons


def test_always_falling_back_is_plain_decoding(target, tok):
    pipe = Pipeline(target, tok, drafter=DRAFTERS["independent"](target, tok))
    plain = pipe.generate(PROMPTS, max_new_tokens=16, speculative=False)
    bild = pipe.generate(PROMPTS, max_new_tokens=16, bild=BildConfig(1.0, math.inf))
    assert bild.token_ids == plain.token_ids
    assert bild.stats.proposed_tokens == 0
    assert bild.stats.fallback_rate == 1.0
    assert bild.stats.tokens_per_target_call == 1.0


@pytest.mark.parametrize("cap", [1, 3, 10])
def test_cap_on_consecutive_small_tokens(target, tok, cap):
    """With no fallback and no rollback, every round is exactly `cap` small tokens and one large one."""
    pipe = Pipeline(target, tok, drafter=DRAFTERS["independent"](target, tok))
    out = pipe.generate(PROMPTS, max_new_tokens=30, bild=BildConfig(0.0, math.inf, cap))
    for flags in out.from_draft:
        assert "T" * (cap + 1) not in "".join("T" if f else "F" for f in flags)
        full_rounds = len(flags) - (cap + 1)  # the last round shrinks to fit max_new_tokens
        assert flags[:full_rounds] == (([True] * cap + [False]) * 30)[:full_rounds]
    assert out.stats.rollback_rate == 0.0
    assert out.stats.acceptance_rate == 1.0


def test_caches_stay_consistent_after_every_rollback(tok):
    target = make_llama(len(tok), seed=0, layers=4)
    drafter = ModelDrafter(make_llama(len(tok), seed=7), tok)
    engine = Engine(target)
    prompts = [tok.encode(p) for p in PROMPTS]
    emitted = [0] * len(prompts)
    active, leaving, last_row, checks = list(range(len(prompts))), [], [math.inf], [0]
    max_new = 40

    def check(row: int, tokens: list[int], flags: list[bool]) -> None:
        if row <= last_row[0]:  # a new step: rows that finished in the last one have left the batch
            active[:] = [r for r in active if r not in leaving]
            leaving.clear()
        last_row[0] = row
        emitted[row] += len(tokens)
        if emitted[row] >= max_new:  # the row's last step, cut to max_new: it leaves the batch
            leaving.append(row)
            return
        pos = active.index(row)
        settled = len(prompts[row]) + emitted[row]  # prompt + output; the last token is pending
        assert int(engine.num_tokens[pos]) == settled - 1
        assert int(drafter.engine.num_tokens[pos]) + len(drafter.unseen[pos]) == settled
        checks[0] += 1

    out = bild_generate(
        engine,
        drafter,
        prompts,
        config=BildConfig(0.02, 6.4, 6),  # near the median confidence and distance of these models
        sampling=GREEDY,
        stop=StopCriteria(max_new_tokens=max_new),
        callback=check,
    )
    assert out.stats.rejections > 0 and out.stats.short_drafts > 0  # both policies were exercised
    assert checks[0] == out.stats.row_steps - len(prompts)  # every step but each row's last


def test_sampled_bild_is_reproducible_and_zero_threshold_rolls_back_every_token(target, tok):
    pipe = Pipeline(target, tok, drafter=DRAFTERS["independent"](target, tok))
    kwargs = dict(max_new_tokens=20, temperature=1.0, top_p=0.8, seed=5)
    first = pipe.generate(PROMPTS, bild=BildConfig(0.1, 2.0), **kwargs)
    again = pipe.generate(PROMPTS, bild=BildConfig(0.1, 2.0), **kwargs)
    assert first.token_ids == again.token_ids
    assert all(len(t) == 20 for t in first.token_ids)
    strict = pipe.generate(PROMPTS, bild=BildConfig(0.0, 0.0), **kwargs)
    assert strict.stats.proposed_tokens > 0
    assert strict.stats.accepted_tokens == 0  # under sampling no token is certain: all replaced


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fallback_threshold": 1.5},
        {"fallback_threshold": -0.1},
        {"fallback_threshold": True},
        {"rollback_threshold": -1.0},
        {"rollback_threshold": math.nan},
        {"rollback_threshold": "3"},
        {"max_small_tokens": 0},
        {"max_small_tokens": 2.5},
    ],
)
def test_invalid_bild_settings_are_refused(kwargs):
    with pytest.raises(InvalidArgumentError):
        BildConfig(**kwargs)


def test_bild_without_a_drafter_is_refused(target, tok):
    with pytest.raises(InvalidArgumentError, match="drafter"):
        Pipeline(target, tok).generate(PROMPTS, max_new_tokens=4, bild=BildConfig())
