"""Conformance of every lossless decoding method against plain decoding, for every drafter.

Lossless means: greedy output equals plain greedy decoding token for token (fp32), and sampled
output with a seed equals plain sampled decoding with that seed (the coupled rule emits the
target's own draw at every position), up to the last position of the context window, whatever γ.
BiLD at α_RB = 0 is held to the same standard. A new method joins by adding itself to METHODS.
"""

import pytest
from decoding_cases import DRAFTERS, PROMPTS, Cached

from specdec.decoders import BiLD, SpeculativeSampling
from tiny import make_gpt2, make_llama

METHODS = {
    "sps-1": SpeculativeSampling(1),
    "sps-3": SpeculativeSampling(3),
    "sps-5": SpeculativeSampling(5),
    "sps-adaptive": SpeculativeSampling("adaptive"),
    "sps-heuristic": SpeculativeSampling("heuristic"),
    "bild-rb0": BiLD(0.3, 0.0, 4),
    "bild-rb0-cap1": BiLD(0.9, 0.0, 1),
    "bild-rb0-no-fallback": BiLD(0.0, 0.0, 10),
}
GREEDY_ONLY = {"sps-rejection-3": SpeculativeSampling(3, "rejection")}  # sampled: exact law, not seed-equal
SAMPLING = dict(temperature=1.0, top_p=0.9, seed=1234)


@pytest.mark.parametrize("drafter", list(DRAFTERS))
@pytest.mark.parametrize("method", [*METHODS, *GREEDY_ONLY])
def test_greedy_output_equals_plain_greedy(cached, drafter, method):
    out = cached.pipe(drafter).generate(PROMPTS, method={**METHODS, **GREEDY_ONLY}[method], max_new_tokens=24)
    plain = cached.plain(PROMPTS, max_new_tokens=24)
    assert out.token_ids == plain.token_ids
    assert out.finish_reasons == plain.finish_reasons
    assert out.stats.target_calls <= plain.stats.target_calls


@pytest.mark.parametrize("drafter", list(DRAFTERS))
@pytest.mark.parametrize("method", list(METHODS))
def test_seeded_sampled_output_equals_plain_sampled_output(cached, drafter, method):
    out = cached.pipe(drafter).generate(PROMPTS, method=METHODS[method], max_new_tokens=24, **SAMPLING)
    assert out.token_ids == cached.plain(PROMPTS, max_new_tokens=24, **SAMPLING).token_ids


def test_sampled_runs_really_sample(cached):
    """The sampled check above is not greedy in disguise: other seeds give other texts."""
    texts = [cached.plain(PROMPTS, max_new_tokens=24, **{**SAMPLING, "seed": s}).token_ids for s in range(4)]
    texts.append(cached.plain(PROMPTS, max_new_tokens=24).token_ids)  # greedy
    assert len({str(t) for t in texts}) == 5


# -- the end of the context window -------------------------------------------------------------------
CONTEXT = 48
EDGE_METHODS = {
    **{f"sps-{g}": SpeculativeSampling(g) for g in (2, 4, 8, 16, "adaptive", "heuristic")},
    "bild-rb0": BiLD(0.0, 0.0, 8),
}


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def short_context(request, tok):
    make = make_llama if request.param == "llama" else make_gpt2
    return Cached(make(len(tok), seed=0, layers=4, context=CONTEXT), tok)


@pytest.mark.parametrize("drafter", list(DRAFTERS))
@pytest.mark.parametrize("method", list(EDGE_METHODS))
def test_every_position_of_the_context_window_is_used(short_context, tok, drafter, method):
    """Near the window's end γ shrinks (down to plain steps) instead of stopping: the output is plain
    decoding's up to the last position, for a ragged batch whose rows reach the edge at different steps."""
    prompts = [tok.encode(PROMPTS[0] * 2)[: CONTEXT - 12], tok.encode(PROMPTS[1])]
    pipe = short_context.pipe(drafter)
    for sampling in ({}, SAMPLING):
        plain = short_context.plain(prompts, max_new_tokens=200, **sampling)
        assert plain.finish_reasons[0] == "context"  # the long row really ran into the window
        assert len(prompts[0]) + len(plain.token_ids[0]) == CONTEXT + 1  # the last token is never fed
        out = pipe.generate(prompts, method=EDGE_METHODS[method], max_new_tokens=200, **sampling)
        assert out.token_ids == plain.token_ids
        assert out.finish_reasons == plain.finish_reasons


def test_a_drafter_with_a_shorter_context_hands_over_to_plain_steps(tok):
    """A draft model whose window ends first stops drafting there; the target decodes on to its own end."""
    from specdec.drafters import ModelDrafter
    from specdec.pipeline import Pipeline

    target = make_llama(len(tok), seed=0, layers=4, context=CONTEXT)
    drafter = ModelDrafter(make_llama(len(tok), seed=0, layers=4, context=CONTEXT - 16), tok)
    prompt = tok.encode(PROMPTS[0])
    pipe = Pipeline(target, tok, drafter=drafter)
    plain = pipe.generate(prompt, method="plain", max_new_tokens=200)
    out = pipe.generate(prompt, method=SpeculativeSampling(4), max_new_tokens=200)
    assert out.token_ids == plain.token_ids and out.finish_reasons == ["context"]
    assert out.stats.accepted_tokens > 0  # it did draft while it could


def test_compiled_engines_keep_greedy_and_seeded_output(tok):
    """Static-shape compiled steps (target and draft engines) change speed only: the same tokens as
    eager plain decoding, greedy and seeded-sampled (one architecture: compiling is the slow part)."""
    from specdec.decoders import PlainDecoding
    from specdec.drafters import ModelDrafter
    from specdec.pipeline import Pipeline

    target = make_llama(len(tok), seed=0, layers=4)
    drafter = ModelDrafter(make_llama(len(tok), seed=7), tok)
    drafter.engine.compile_steps()
    pipe, eager = Pipeline(target, tok, drafter=drafter, compile=True), Pipeline(target, tok)
    for options in ({}, SAMPLING):
        plain = eager.generate(PROMPTS, method="plain", max_new_tokens=24, **options)
        for method in (PlainDecoding(), SpeculativeSampling(3), SpeculativeSampling("adaptive")):
            out = pipe.generate(PROMPTS, method=method, max_new_tokens=24, **options)
            assert out.token_ids == plain.token_ids
