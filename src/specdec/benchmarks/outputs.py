"""Where a benchmark run writes, and the rule that a run never overwrites another's results.

Every command that writes results (`bench spec`, `bench bild`, `bench engine`, `eval bita`, `eval tandem`)
names its files after the run's UTC date and time unless told otherwise, puts its page (.md) and plot
(.png) beside the JSON, and refuses a path that already holds a file: a sweep run with the defaults twice
once replaced the first day's BiLD results this way. ``--overwrite`` says the user means it; re-summarising
a run (``--from-json``) rewrites that run's own files.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from specdec.errors import InvalidArgumentError

#: The files a run may write besides its JSON, and the suffix each takes beside it by default.
PAGES = {"markdown": ".md", "plot": ".png"}


def add_output_arguments(group, kind: str, *, plot: bool = False, from_json: bool = False) -> None:
    """``--out``, ``--markdown`` (``--plot``), ``--overwrite`` (and ``--from-json``) on a parser or
    argument group, for :func:`claim_outputs`."""
    group.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"results JSON (default: benchmarks/results/{kind}_<UTC date and time>.json)",
    )
    group.add_argument("--markdown", type=Path, default=None, help="the page (default: the JSON's path, .md)")
    if plot:
        group.add_argument(
            "--plot", type=Path, default=None, help="the plot (default: the JSON's path, .png)"
        )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing files (by default a run refuses: it never overwrites another's results)",
    )
    if from_json:
        group.add_argument(
            "--from-json",
            type=Path,
            default=None,
            help="re-summarise a results file (no runs) and rewrite its page" + (" and plot" if plot else ""),
        )


def claim_outputs(args: argparse.Namespace, kind: str) -> None:
    """Set ``args.out`` and the pages the command writes to this run's own paths, before anything runs.

    Unset, the JSON is ``benchmarks/results/<kind>_<UTC date and time>.json`` and each page sits beside
    it (:data:`PAGES`); re-summarising, it is the file being re-summarised. A path that holds a file is
    refused with a :class:`~specdec.errors.InvalidArgumentError` unless ``--overwrite`` or ``--from-json``.
    """
    from_json = getattr(args, "from_json", None)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d_%H%M")
    args.out = from_json or args.out or Path(f"benchmarks/results/{kind}_{stamp}.json")
    pages = [name for name in PAGES if hasattr(args, name)]
    for name in pages:
        if getattr(args, name) is None:
            setattr(args, name, args.out.with_suffix(PAGES[name]))
    if not (from_json or args.overwrite):
        refuse_taken(args.out, *(getattr(args, name) for name in pages), hint=", or pass --overwrite")


def refuse_taken(*paths: str | Path, hint: str = "") -> None:
    """A :class:`~specdec.errors.InvalidArgumentError` naming each of ``paths`` that holds a file."""
    taken = [str(path) for path in paths if Path(path).exists()]
    if taken:
        raise InvalidArgumentError(
            f"{', '.join(taken)} already exist(s): a run does not overwrite another's results "
            f"(choose new --out / --markdown paths{hint})"
        )


def relative_link(target: Path, start: Path) -> str:
    """``target`` as a page in ``start`` links to it: relative where it lies below, else as given."""
    try:
        return str(target.resolve().relative_to(start.resolve()))
    except ValueError:
        return str(target)
