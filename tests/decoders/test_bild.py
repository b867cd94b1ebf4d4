"""Big Little Decoder: policies on hand-built logits, decoder invariants on tiny models.

(That α_RB = 0 reproduces plain decoding, greedy and seeded sampling, for every drafter and at the
end of the context window, is in test_lossless.py with the lossless methods.)"""

import itertools
import math

import pytest
import torch
from decoding_cases import PROMPTS

from specdec.decoders import BiLD, Request, StopCriteria, bild_verify, rollback_distance
from specdec.decoders.common import target_choice
from specdec.drafters import Draft, ModelDrafter
from specdec.drafters.small_model import draft_autoregressively
from specdec.engine import Engine
from specdec.sampling import KeyedDraws, SamplingConfig, max_probability
from tiny import make_llama

GREEDY = SamplingConfig()
NO_DRAWS = KeyedDraws([0, 1], [0, 0])  # greedy rules never draw


def _logits_from_probs(rows: list[list[list[float]]]) -> torch.Tensor:
    """[B, T, V] logits whose softmax is exactly the given distributions (up to rounding)."""
    return torch.tensor(rows, dtype=torch.float64).log()


# -- fallback ---------------------------------------------------------------------------------------
def test_fallback_fires_strictly_below_the_threshold():
    """The drafter's own comparison: a confidence equal to α_FB keeps drafting, the next double
    above it stops the row before its first token."""
    logits = _logits_from_probs([[[0.5, 0.3, 0.2]], [[0.9, 0.05, 0.05]]])[:, 0]
    at = float(max_probability(logits)[0])
    assert at == pytest.approx(0.5, abs=1e-12)

    def step(tokens):
        raise AssertionError("γ = 1: the drafter never runs the model after its first token")

    for threshold, lengths in ((at, [1, 1]), (math.nextafter(at, 1.0), [0, 1]), (0.95, [0, 0])):
        run = draft_autoregressively(logits, step, 1, GREEDY, NO_DRAWS, min_confidence=threshold)
        assert run.draft.row_lengths().tolist() == lengths, threshold


def test_drafter_stops_each_row_before_its_first_unconfident_token(tok):
    """Lengths equal the first position whose confidence is below α_FB, recomputed by teacher forcing."""
    model = make_llama(len(tok), seed=3)
    prompts = [tok.encode(p) for p in PROMPTS]
    drafter = ModelDrafter(model, tok)
    drafter.begin(prompts, None)
    free = drafter.propose(8, GREEDY, NO_DRAWS)
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
        drafter.begin(prompts, None)
        draft = drafter.propose(8, GREEDY, NO_DRAWS, min_confidence=threshold)
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
    result = bild_verify(draft, _logits_from_probs(q), 1.5, GREEDY, NO_DRAWS)
    assert result.num_accepted.tolist() == [1, 2]
    assert result.next_token.tolist() == [0, 0]  # row 0: argmax at position 1; row 1: at position 2


def test_a_distance_equal_to_the_threshold_is_kept():
    q = [[[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]]
    draft = Draft(tokens=torch.tensor([[2]]))
    logits = _logits_from_probs(q)
    at = float(rollback_distance(draft.tokens, logits[:, :1]))
    sampling = SamplingConfig(temperature=1.0)
    # A key whose draw at position 0 is not the small token, so only the distance can keep it.
    key = next(k for k in range(100) if int(_choice(logits[0, 0], sampling, k)) != 2)
    draws = KeyedDraws([key], [0])
    kept = bild_verify(draft, logits, at, sampling, draws)
    assert kept.num_accepted.tolist() == [1]
    rolled = bild_verify(draft, logits, math.nextafter(at, 0.0), sampling, draws)
    assert rolled.num_accepted.tolist() == [0]
    assert rolled.next_token.tolist() == [
        int(_choice(logits[0, 0], sampling, key))
    ]  # the large model's own draw


def test_greedy_never_rolls_back_a_token_the_large_model_would_pick():
    q = [[[0.4, 0.3, 0.3], [0.34, 0.33, 0.33]]]  # token 0 is the argmax but d = 0.92 > α_RB
    draft = Draft(tokens=torch.tensor([[0]]))
    assert bild_verify(draft, _logits_from_probs(q), 0.5, GREEDY, NO_DRAWS).num_accepted == 1


def _choice(logits: torch.Tensor, sampling: SamplingConfig, key: int) -> torch.Tensor:
    """The large model's own draw at output position 0 for a row with this key (stream DRAW)."""
    return target_choice(logits[None], sampling, KeyedDraws([key], [0]), 0)[0]


def test_sampled_bild_keeps_a_small_token_the_large_model_draws_itself():
    """Under sampling the deviation is the same as greedy's: a small token equal to the large model's
    own draw at that position is kept whatever its distance; any other token beyond α_RB is replaced
    by that draw."""
    logits = _logits_from_probs([[[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]]])
    sampling = SamplingConfig(temperature=1.0)
    for key in range(30):
        own = int(_choice(logits[0, 0], sampling, key))
        for token in range(3):
            out = bild_verify(Draft(torch.tensor([[token]])), logits, 0.0, sampling, KeyedDraws([key], [0]))
            assert out.num_accepted.tolist() == [int(token == own)]
            if token != own:
                assert out.next_token.tolist() == [own]


# -- decoder invariants -----------------------------------------------------------------------------
def test_always_falling_back_is_plain_decoding(cached):
    plain = cached.plain(PROMPTS, max_new_tokens=16)
    bild = cached.pipe("independent").generate(PROMPTS, method=BiLD(1.0, math.inf), max_new_tokens=16)
    assert bild.token_ids == plain.token_ids
    assert bild.stats.proposed_tokens == 0
    # Every step falls back, but each row's last: with one token left there is nothing to draft (γ = 0).
    assert bild.stats.short_drafts == bild.stats.row_steps - len(PROMPTS)
    assert bild.stats.tokens_per_target_call == 1.0


@pytest.mark.parametrize("cap", [1, 3, 10])
def test_cap_on_consecutive_small_tokens(cached, cap):
    """With no fallback and no rollback, every round is exactly `cap` small tokens and one large one."""
    out = cached.pipe("independent").generate(PROMPTS, max_new_tokens=30, method=BiLD(0.0, math.inf, cap))
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

    request = Request(prompts, GREEDY, StopCriteria(max_new_tokens=max_new), keys=[0, 1], callback=check)
    # Thresholds near the median confidence and distance of these models: both policies fire.
    out = BiLD(0.02, 6.4, 6).decode(engine, drafter, request)
    assert out.stats.rejections > 0 and out.stats.short_drafts > 0  # both policies were exercised
    assert checks[0] == out.stats.row_steps - len(prompts)  # every step but each row's last


def test_a_loose_threshold_keeps_tokens_the_large_model_would_not_choose(cached):
    plain = cached.plain(PROMPTS, max_new_tokens=20, temperature=1.0, seed=5)
    loose = cached.pipe("independent").generate(
        PROMPTS, method=BiLD(0.0, math.inf, 4), max_new_tokens=20, temperature=1.0, seed=5
    )
    assert loose.stats.acceptance_rate == 1.0
    assert loose.token_ids != plain.token_ids
