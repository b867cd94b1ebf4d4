"""The library's speedup on a load test's concurrency-1 requests, and its line beside the server's."""

from specdec.benchmarks.library_baseline import library_speedup
from specdec.benchmarks.server_load import request_mix
from specdec.benchmarks.server_load_report import aggregate, library_line


def test_the_library_decodes_the_same_requests_plain_and_speculative(tiny_model_dir):
    row = library_speedup(str(tiny_model_dir), "prompt-lookup", request_mix(3, seed=1))
    assert row["requests"] == 3
    assert row["tokens_per_s_off"] > 0 and row["tokens_per_s_speculative"] > 0
    assert row["speedup"] == row["tokens_per_s_speculative"] / row["tokens_per_s_off"]


def test_the_markdown_sets_the_library_beside_the_server_at_one_request():
    loops = [
        {"concurrency": 1, "method": "off", "tokens_per_s": 10.0},
        {"concurrency": 1, "method": "server", "tokens_per_s": 12.0},
    ]
    library = {"requests": 8, "speedup": 1.3, "tokens_per_s_off": 20.0, "tokens_per_s_speculative": 26.0}
    times = dict.fromkeys(("ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s"), 0.1)
    rows = aggregate([r | times | {"draft_acceptance_rate": None, "requests": 8, "failed": 0} for r in loops])
    line = library_line({"loops": loops, "library_c1": library}, rows)[0]
    assert "1.30× (20.0 → 26.0 tok/s)" in line and "the server's 1.20×" in line
    assert library_line({"loops": loops}, rows) == []  # not measured: no line
