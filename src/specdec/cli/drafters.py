"""``specdec drafters``: every drafter spelling, and the drafters packaged with specdec, with the digest
of their weights (the one results files record)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from specdec.drafters.factory import DRAFTER_SPECS
from specdec.models.packaged import (
    drafter_digest,
    packaged_bitas,
    packaged_drafts,
    packaged_eagle3s,
    packaged_tandems,
)


def run_drafters(args: argparse.Namespace) -> None:
    console = Console(highlight=False)
    specs = Table(title="drafter specs (--drafter, and the server's --drafter)", title_justify="left")
    specs.add_column("spec", no_wrap=True)
    specs.add_column("what it is")
    for spec, what in DRAFTER_SPECS:
        specs.add_row(spec, what)
    console.print(specs)
    packaged = Table(title="packaged drafters (for smollm2-135m)", title_justify="left")
    for column in ("spec", "kind", "weights (sha256, first 16 hex)"):
        packaged.add_column(column, no_wrap=True)
    kinds = (("draft", packaged_drafts(), ""), ("tandem", packaged_tandems(), "tandem:"))
    kinds += (("bita", packaged_bitas(), "bita:"), ("eagle3", packaged_eagle3s(), "eagle3:"))
    for kind, names, prefix in kinds:
        for name in sorted(names):
            packaged.add_row(prefix + name, kind, drafter_digest(name) or "–")
    console.print(packaged)
