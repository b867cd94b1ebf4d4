"""The Spec-Bench page's header says where the run's records are, from the page's point of view."""

from __future__ import annotations

from specdec.benchmarks.spec_markdown import records_line


def test_records_below_the_page_are_a_relative_link(tmp_path):
    page = tmp_path / "benchmarks" / "BENCH.md"
    records = tmp_path / "benchmarks" / "results" / "bench.json"
    assert (
        records_line(str(records), page)
        == "Raw per-prompt records: [results/bench.json](results/bench.json)."
    )


def test_a_relative_path_is_read_from_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = records_line("benchmarks/results/bench.json", tmp_path / "benchmarks" / "BENCH.md")
    assert line == "Raw per-prompt records: [results/bench.json](results/bench.json)."


def test_records_elsewhere_keep_the_path_as_given(tmp_path):
    page = tmp_path / "pages" / "BENCH.md"
    elsewhere = str(tmp_path / "runs" / "bench.json")
    assert records_line(elsewhere, page) == f"Raw per-prompt records: [{elsewhere}]({elsewhere})."
