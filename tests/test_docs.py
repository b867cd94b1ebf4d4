"""The README and docs/: the methods table is the committed results' (never typed by hand), every relative
link resolves, and the README keeps its first two commands and stays a page, not a notebook."""

import json
import re
from pathlib import Path

import pytest

from specdec.benchmarks.methods_table import methods_table

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_starts_with_the_setup_and_test_commands_and_stays_short():
    lines = README.read_text().splitlines()
    block = "\n".join(lines[:6])
    assert "./scripts/setup.sh && .venv/bin/specdec demo" in block and ".venv/bin/python -m pytest" in block
    assert len(lines) <= 160


def test_the_readme_methods_table_is_the_results_page_run():
    text = README.read_text()
    (name,) = re.findall(r"`(benchmarks/results/results_page_[^`]+\.json)`", text)
    report = json.loads((ROOT / name).read_text())
    assert methods_table(report) in text
    page = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert name.removeprefix("benchmarks/") in page or name in page  # the page is that run's too


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"
