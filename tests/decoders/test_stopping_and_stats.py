import pytest
import torch
from decoding_cases import PROMPTS

from specdec.decoders import SpeculativeSampling, StopCriteria
from specdec.drafters import PromptLookupDrafter
from specdec.errors import InvalidArgumentError
from specdec.pipeline import Pipeline
from tiny import make_gpt2


def test_stop_criteria_unit():
    stop = StopCriteria(max_new_tokens=10, eos_token_ids=frozenset({2}), stop_strings=("ab",), decode="".join)
    assert stop.first_stop(["x", "y"], 0) is None
    assert stop.first_stop(["x", 2, "y"], 0) == (2, "eos")
    assert stop.first_stop(["x", "a", "b", "c"], 1) == (3, "stop_string")
    assert stop.first_stop(["x"] * 12, 5) == (10, "length")


@pytest.mark.parametrize("method", ["plain", SpeculativeSampling(4)])
def test_eos_and_stop_strings_end_rows_like_plain_decoding(cached, tok, method):
    pipe = cached.pipe("self")
    free = cached.plain(PROMPTS[0], max_new_tokens=20).token_ids[0]
    text_stop = tok.decode(free[3:5])
    by_text = pipe.generate(PROMPTS[0], method=method, max_new_tokens=20, stop=[text_stop])
    assert by_text.finish_reasons == ["stop_string"]
    assert text_stop in tok.decode(by_text.token_ids[0]) and len(by_text.token_ids[0]) <= 5
    generation_config = pipe.model.generation_config
    stop_token, generation_config.eos_token_id = free[5], free[5]
    try:
        out = pipe.generate(PROMPTS[0], method=method, max_new_tokens=20)
    finally:
        generation_config.eos_token_id = None
    assert out.finish_reasons == ["eos"]
    assert out.token_ids[0] == free[: free.index(stop_token) + 1]


def test_a_stop_string_given_as_a_str_is_one_string(tok):
    """Regression: stop="ab" used to be split into the characters "a" and "b"."""
    pipe = Pipeline(make_gpt2(len(tok), seed=0, layers=4), tok, drafter=PromptLookupDrafter())  # varied text
    free = pipe.generate(PROMPTS[1], method="plain", max_new_tokens=30).token_ids[0]
    text = tok.decode(free)
    # Printable characters first found late in the text, one of which already occurred earlier: as
    # separate characters they would have stopped the row there, before the string itself.
    start = next(
        i
        for i in range(len(text) // 3, len(text) - 2)
        if (window := text[i : i + 2]).isascii()
        and window.isprintable()
        and text.find(window) == i
        and any(c in text[:i] for c in window)
    )
    stop = text[start : start + 2]
    for method in ("plain", SpeculativeSampling(3)):
        out = pipe.generate(PROMPTS[1], method=method, max_new_tokens=30, stop=stop)
        kept = out.token_ids[0]
        assert out.finish_reasons == ["stop_string"]
        assert stop in tok.decode(kept) and stop not in tok.decode(kept[:-1])  # stopped where it completed
        assert kept == pipe.generate(PROMPTS[1], method=method, max_new_tokens=30, stop=[stop]).token_ids[0]


@pytest.mark.parametrize("stop", ["", [""], ["x", ""], [None], [3], 7])
def test_empty_or_non_string_stops_are_refused(cached, stop):
    """Regression: an empty stop string used to end every row after one token."""
    with pytest.raises(InvalidArgumentError, match="stop"):
        cached.pipe("self").generate(PROMPTS[0], max_new_tokens=5, stop=stop)


def test_stream_callback_sees_every_token_once_in_order(cached):
    seen: dict[int, list] = {0: [], 1: []}
    flags: dict[int, list] = {0: [], 1: []}
    calls: list[int] = []

    def on_tokens(row, tokens, from_draft):
        seen[row].extend(tokens)
        flags[row].extend(from_draft)
        calls.append(row)
        assert from_draft == sorted(from_draft, reverse=True)  # accepted draft tokens, then the target's
        assert from_draft.count(False) <= 1

    out = cached.pipe("truncated").generate(
        PROMPTS, method=SpeculativeSampling(3), max_new_tokens=17, stream=on_tokens
    )
    assert [seen[0], seen[1]] == out.token_ids
    assert [flags[0], flags[1]] == out.from_draft
    assert len(calls) == out.stats.row_steps  # one call per row per step


def test_from_draft_flags_count_the_accepted_tokens(cached):
    """One row: γ never exceeds what the row can still use, so no accepted token is cut off."""
    out = cached.pipe("truncated").generate(PROMPTS[0], method=SpeculativeSampling(3), max_new_tokens=17)
    assert out.finish_reasons == ["length"]
    assert sum(out.from_draft[0]) == out.stats.accepted_tokens > 0


def test_stats_add_up(cached):
    out = cached.pipe("truncated").generate(PROMPTS[0], method=SpeculativeSampling(3), max_new_tokens=40)
    s = out.stats
    # every target call yields its accepted drafts plus one token
    assert s.new_tokens == s.accepted_tokens + s.target_calls == 40
    assert s.draft_calls == s.proposed_tokens <= 3 * s.target_calls  # γ shrinks near max_new_tokens
    assert 0 <= s.acceptance_rate <= 1
    assert sum(s.accepted_histogram.values()) == s.target_calls
    assert s.total_time >= s.target_time + s.draft_time
    assert torch.isclose(torch.tensor(s.tokens_per_target_call), torch.tensor(40 / s.target_calls))


def test_long_fixed_drafts_fit_the_cache(cached):
    plain = cached.plain(PROMPTS[0], max_new_tokens=30)
    assert cached.pipe("self").generate(
        PROMPTS[0], method=SpeculativeSampling(24), max_new_tokens=30
    ).token_ids == (plain.token_ids)
