"""The load test's rounds: rotated order, ratios to the same round's plain loop, medians over rounds."""

from hypothesis import given
from hypothesis import strategies as st

from specdec.benchmarks.server_load_report import LOOPS, aggregate, markdown, rotated


@given(st.integers(0, 50))
def test_every_round_runs_each_loop_once_and_the_first_loop_rotates(turn):
    assert sorted(rotated(turn)) == sorted(LOOPS)
    assert rotated(turn)[0] == LOOPS[turn % len(LOOPS)]


def loop(concurrency: int, name: str, turn: int, tokens_per_s: float, acceptance=None) -> dict:
    method = "server" if name == "server" else "off"
    return {
        "concurrency": concurrency,
        "method": method,
        "label": name,
        "round": turn,
        "requests": 4,
        "failed": 0,
        "tokens_per_s": tokens_per_s,
        "ttft_p50_s": 0.1,
        "ttft_p99_s": 0.2,
        "itl_p50_s": 0.05,
        "itl_p99_s": 0.06,
        "draft_acceptance_rate": acceptance,
    }


def test_ratios_are_taken_within_a_round_and_summarised_by_their_median():
    """A machine twice as fast in round 1: each round's ratio uses its own plain loop, so the speedup
    reads 1.10× in both, where pooling the rounds' tokens/s would not."""
    loops = []
    for turn, scale in enumerate([1.0, 2.0, 1.0]):
        loops += [
            loop(8, "off", turn, 10.0 * scale),
            loop(8, "server", turn, 11.0 * scale, acceptance=0.3),
            loop(8, "off (repeat)", turn, [9.0, 21.0, 10.0][turn] * scale / (2.0 if turn == 1 else 1.0)),
        ]
    rows = {r["label"]: r for r in aggregate(loops)}
    assert rows["server"]["ratio"] == rows["server"]["ratio_min"] == rows["server"]["ratio_max"]
    assert abs(rows["server"]["ratio"] - 1.1) < 1e-12
    assert rows["off (repeat)"]["ratio_min"] == 0.9 and rows["off (repeat)"]["ratio_max"] == 1.05
    assert rows["server"]["rounds"] == 3 and rows["server"]["tokens_per_s"] == 11.0  # the median
    assert rows["server"]["acceptance"] == 0.3 and rows["off"]["acceptance"] is None


def test_the_markdown_has_one_row_per_concurrency_and_loop():
    loops = [loop(c, name, t, 10.0 + t) for c in (1, 16) for t in range(2) for name, _ in rotated(t)]
    report = {
        "machine": {"command": "specdec bench server", "date": "d", "cpu": "c", "cores": 2, "torch": "t"},
        "model": "m",
        "drafter": "prompt-lookup",
        "rounds": 2,
        "loops": loops,
        "burst": {"streams": 4, "failed": 0, "differ_from_alone": 0, "rss_mib": [1.0, 2.0, 3.0]},
    }
    table = [
        line for line in markdown(report).splitlines() if line.startswith("| 1") or line.startswith("| 16")
    ]
    assert [line.split(" | ")[1] for line in table] == ["off", "server", "off (repeat)"] * 2
    assert all("2 × 4" in line and "1.00× [1.00, 1.00]" in line for line in table)


def test_the_page_names_the_drafter_weights_the_run_used():
    report = {
        "machine": {"command": "specdec bench server", "date": "d", "cpu": "c", "cores": 2, "torch": "t"},
        "model": "m",
        "drafter": "int8:eagle3:smollm2-135m-eagle3",
        "drafter_digest": "0123456789abcdef",
        "loops": [loop(1, name, 0, 10.0) for name, _ in rotated(0)],
        "burst": {"streams": 4, "failed": 0, "differ_from_alone": 0, "rss_mib": [1.0, 2.0, 3.0]},
    }
    assert "int8:eagle3:smollm2-135m-eagle3 (weights sha256 0123456789abcdef)" in markdown(report)
    assert "weights sha256" not in markdown(report | {"drafter_digest": None})
