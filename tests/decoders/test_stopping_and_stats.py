import torch

from conftest import DRAFTERS, PROMPTS
from specdec.decoders import StopCriteria
from specdec.pipeline import Pipeline
from tiny import make_llama


def test_stop_criteria_unit():
    stop = StopCriteria(max_new_tokens=10, eos_token_ids=frozenset({2}), stop_strings=("ab",), decode="".join)
    assert stop.first_stop(["x", "y"], 0) is None
    assert stop.first_stop(["x", 2, "y"], 0) == (2, "eos")
    assert stop.first_stop(["x", "a", "b", "c"], 1) == (3, "stop_string")
    assert stop.first_stop(["x"] * 12, 5) == (10, "length")


def test_eos_and_stop_strings_end_rows_like_plain_decoding(tok):
    target = make_llama(len(tok), seed=0, layers=4)
    pipe = Pipeline(target, tok, drafter=DRAFTERS["self"](target, tok))
    free = pipe.generate(PROMPTS[0], max_new_tokens=20, speculative=False)
    stop_token = free.token_ids[0][5]
    text_stop = tok.decode(free.token_ids[0][3:5])
    eos = Pipeline(target, tok, drafter=DRAFTERS["self"](target, tok))
    eos.model.generation_config.eos_token_id = stop_token
    for speculative in (False, True):
        out = eos.generate(PROMPTS[0], max_new_tokens=20, speculative=speculative, gamma=4)
        assert out.finish_reasons == ["eos"]
        assert out.token_ids[0] == free.token_ids[0][: free.token_ids[0].index(stop_token) + 1]
        by_text = pipe.generate(
            PROMPTS[0], max_new_tokens=20, speculative=speculative, gamma=4, stop=[text_stop]
        )
        assert by_text.finish_reasons == ["stop_string"]
        assert text_stop in tok.decode(by_text.token_ids[0])
        assert len(by_text.token_ids[0]) <= 5
    eos.model.generation_config.eos_token_id = None


def test_stream_callback_sees_every_token_once_in_order(tok):
    target = make_llama(len(tok), seed=0, layers=4)
    pipe = Pipeline(target, tok, drafter=DRAFTERS["truncated"](target, tok))
    seen: dict[int, list] = {0: [], 1: []}
    flags: dict[int, list] = {0: [], 1: []}

    def on_tokens(row, tokens, from_draft):
        seen[row].extend(tokens)
        flags[row].extend(from_draft)

    out = pipe.generate(PROMPTS, max_new_tokens=17, gamma=3, stream=on_tokens)
    assert [seen[0], seen[1]] == out.token_ids
    assert [flags[0], flags[1]] == out.from_draft
    assert sum(map(sum, out.from_draft)) == out.stats.accepted_tokens or out.finish_reasons != ["length"] * 2


def test_stats_add_up(tok):
    target = make_llama(len(tok), seed=0, layers=4)
    pipe = Pipeline(target, tok, drafter=DRAFTERS["truncated"](target, tok))
    out = pipe.generate(PROMPTS[0], max_new_tokens=40, gamma=3)
    s = out.stats
    # every target call yields its accepted drafts plus one token (the last step may be cut at max_new_tokens)
    assert s.new_tokens <= s.accepted_tokens + s.target_calls
    assert s.new_tokens == 40
    assert s.draft_calls == s.proposed_tokens <= 3 * s.target_calls  # γ shrinks near max_new_tokens
    assert 0 <= s.acceptance_rate <= 1
    assert sum(s.accepted_histogram.values()) == s.target_calls
    assert s.total_time >= s.target_time + s.draft_time
    assert torch.isclose(torch.tensor(s.tokens_per_target_call), torch.tensor(40 / s.target_calls))


def test_long_fixed_drafts_fit_the_cache(tok):
    target = make_llama(len(tok), seed=0, layers=4)
    pipe = Pipeline(target, tok, drafter=DRAFTERS["self"](target, tok))
    plain = pipe.generate(PROMPTS[0], max_new_tokens=30, speculative=False)
    assert pipe.generate(PROMPTS[0], max_new_tokens=30, gamma=24).token_ids == plain.token_ids
