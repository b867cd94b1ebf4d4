"""The continuous-batching driver on a tiny model (what it measures is not tested here, only that it
serves every request, in order, with the text each gets alone)."""

from specdec.benchmarks import serving
from specdec.benchmarks.report import machine_info
from specdec.benchmarks.serving import aggregate, markdown, run_round, serve, summary
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


def test_rounds_rotate_the_order_and_check_every_text_against_plain_of_the_same_round(monkeypatch):
    engine = Engine(make_llama(320, seed=0, layers=2))
    drafter = PromptLookupDrafter()
    drafter.attach(engine)
    stop = StopCriteria(6, frozenset({0}))
    configs = [("plain", None, None), ("sps", "lookup", lambda: 3), ("plain (repeat)", None, None)]
    order = []
    original = serving.serve

    def recording(method, *args):
        order.append(type(method).__name__)
        return original(method, *args)

    monkeypatch.setattr(serving, "serve", recording)
    runs = []
    for turn in range(3):
        runs += run_round(configs, turn, engine, {"lookup": drafter}, PROMPTS[:3], 2, stop)
    plain, sps = "PlainDecoding", "SpeculativeSampling"
    assert order == [plain, sps, plain, sps, plain, plain, plain, plain, sps]  # each round starts elsewhere
    assert [r["round"] for r in runs] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert all(r["identical_to_plain"] == 3 for r in runs if r["method"] != "plain")
    rows = {(r["method"], r["drafter"]): r for r in aggregate(runs)}
    assert rows["plain", None]["speedup_median"] == 1.0 and rows["plain", None]["rounds"] == 3
    assert rows["sps", "lookup"]["identical"] == 9 and rows["sps", "lookup"]["compared"] == 9
    ratios = [s["tokens_per_s"] / p["tokens_per_s"] for s, p in zip(runs[1::3], runs[::3], strict=True)]
    assert rows["sps", "lookup"]["speedup_min"] == min(ratios)
    assert rows["sps", "lookup"]["speedup_median"] == sorted(ratios)[1]
    assert "median [min, max] over rounds" in markdown(
        {"machine": machine_info(), "model": "tiny", "rounds": 3, "drafters": {"lookup": None}, "runs": runs}
    )
