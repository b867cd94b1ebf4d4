"""The continuous-batching driver on a tiny model (what it measures is not tested here, only that it
serves every request, in order, with the text each gets alone)."""

from specdec.benchmarks.serving import serve, summary
from specdec.decoders import PlainDecoding, SpeculativeSampling, StopCriteria
from specdec.drafters import PromptLookupDrafter
from specdec.engine import Engine
from tiny import make_llama

PROMPTS = [[5, 9, 14, 22, 5, 9, 14], [40, 41, 42, 40, 41], [7, 70, 71, 7, 70], [3, 4], [8, 9, 8, 9, 8]]


def test_a_closed_loop_serves_every_request_as_it_would_be_served_alone():
    engine = Engine(make_llama(320, seed=0, layers=2))
    drafter = PromptLookupDrafter()
    drafter.attach(engine)
    stop = StopCriteria(9, frozenset({0}))
    alone = [serve(PlainDecoding(), engine, None, [p], 1, stop)[0][0].tokens for p in PROMPTS]
    plain, row = serve(PlainDecoding(), engine, None, PROMPTS, 2, stop)
    spec, spec_row = serve(SpeculativeSampling(3), engine, drafter, PROMPTS, 3, stop)
    assert [line.tokens for line in plain] == [line.tokens for line in spec] == alone
    assert all(line.done >= line.first >= line.admitted for line in plain + spec)
    assert row["new_tokens"] == sum(len(t) for t in alone) == spec_row["new_tokens"]
    assert summary(spec, spec_row, plain)["identical_to_plain"] == len(PROMPTS)
