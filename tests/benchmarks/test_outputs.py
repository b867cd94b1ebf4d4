"""A run writes its own files: dated names by default, and never over another run's results."""

from __future__ import annotations

import argparse

import pytest

from specdec.benchmarks.outputs import add_output_arguments, claim_outputs
from specdec.cli.main import main
from specdec.errors import InvalidArgumentError


def parse(argv: list[str], plot: bool = True, from_json: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_output_arguments(parser, "sweep", plot=plot, from_json=from_json)
    return parser.parse_args(argv)


def test_by_default_the_files_are_dated_and_side_by_side(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = parse([])
    claim_outputs(args, "sweep")
    assert args.out.parent.as_posix() == "benchmarks/results" and args.out.name.startswith("sweep_2")
    assert args.markdown == args.out.with_suffix(".md") and args.plot == args.out.with_suffix(".png")


def test_given_paths_are_kept_and_missing_pages_go_beside_the_json(tmp_path):
    args = parse(["--out", str(tmp_path / "a.json"), "--plot", str(tmp_path / "p.png")])
    claim_outputs(args, "sweep")
    assert (args.out, args.markdown, args.plot) == (
        tmp_path / "a.json",
        tmp_path / "a.md",
        tmp_path / "p.png",
    )


@pytest.mark.parametrize("existing", ["a.json", "a.md", "a.png"])
def test_any_existing_file_of_the_run_is_refused(tmp_path, existing):
    (tmp_path / existing).write_text("another run's results")
    args = parse(["--out", str(tmp_path / "a.json")])
    with pytest.raises(InvalidArgumentError, match=f"{existing} already exist"):
        claim_outputs(args, "sweep")
    assert (tmp_path / existing).read_text() == "another run's results"


def test_overwrite_and_re_summarising_may_write_over_their_files(tmp_path):
    for name in ("a.json", "a.md", "a.png"):
        (tmp_path / name).write_text("{}")
    claim_outputs(parse(["--out", str(tmp_path / "a.json"), "--overwrite"]), "sweep")
    args = parse(["--from-json", str(tmp_path / "a.json")])
    claim_outputs(args, "sweep")
    assert (args.out, args.markdown, args.plot) == (
        tmp_path / "a.json",
        tmp_path / "a.md",
        tmp_path / "a.png",
    )


def test_a_command_without_pages_claims_its_json_only(tmp_path):
    args = parse(["--out", str(tmp_path / "a.json")], plot=False, from_json=False)
    del args.markdown
    claim_outputs(args, "sweep")
    assert not hasattr(args, "plot") and not hasattr(args, "markdown")


@pytest.mark.parametrize(
    "command",
    [
        "bench engine --shapes tiny",
        "bench bild --drafters prompt-lookup",
        "bench spec --drafters prompt-lookup",
        "eval bita --adapter a=nowhere --answers nowhere",
        "eval tandem --model a=nowhere",
    ],
)
def test_every_results_command_refuses_another_runs_file_before_running(tmp_path, capsys, command):
    taken = tmp_path / "taken.json"
    taken.write_text("{}")
    assert main([*command.split(), "--out", str(taken)]) == 2
    assert "a run does not overwrite another's results" in capsys.readouterr().err
    assert taken.read_text() == "{}"


@pytest.mark.parametrize("command", ["bench serving", "bench server"])
def test_the_serving_benches_refuse_another_runs_page_too(tmp_path, capsys, command):
    taken = tmp_path / "taken.md"
    taken.write_text("another run's page")
    assert main([*command.split(), "--out", str(tmp_path / "new.json"), "--markdown", str(taken)]) == 2
    assert f"{taken} already exist(s): a run does not overwrite another's results" in capsys.readouterr().err
    assert taken.read_text() == "another run's page" and not (tmp_path / "new.json").exists()
