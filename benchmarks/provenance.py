"""Stamp a ``Provenance:`` paragraph (run date, source commit, drafter weight digests) into results pages.

Why: packaged drafters keep their names when retrained, so a page naming only ``smollm2-135m-draft``
cannot tell which weights made its numbers, nor, without a commit, which code. Facts come from the page's
raw JSON, else git: the last commit before the run's recorded time and the commit that committed the
page bracket the run (its adding commit does not: reruns rewrote pages). Packaged weights are hashed
there as ``models.packaged.drafter_digest`` hashes them, both if they differ. Unknowns are said to be
unknown. Idempotent.

    python benchmarks/provenance.py [--dry-run]
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRAFTS = "src/specdec/models/drafts"
SKIPPED = {"CAMPAIGN.md", "HISTORY.md", "RESULTS.md", "early-exit.md"}  # not one run's results
RAW_JSON = re.compile(r"(?<![\w.-])((?:benchmarks/)?results/[\w.-]+\.json)")
TEXT_DATE = re.compile(r"(?:\bon|date:) (\d{4}-\d\d-\d\d \d\d:\d\d UTC)")  # as the report writers put it
LOCAL_FOLDER = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)+(?:best|checkpoint-\d+))(?![\w-])")


def git(*args: str) -> bytes:
    """Stdout of a git command run at the repository root (raises if git fails)."""
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout


def raw_json(text: str) -> tuple[str | None, dict]:
    """The first raw JSON path the page names, and its contents ({} if absent or unreadable)."""
    match = RAW_JSON.search(text)
    try:
        data = json.loads((ROOT / match.group(1)).read_text()) if match else {}
    except (OSError, ValueError):
        data = {}
    return (match.group(1) if match else None), data if isinstance(data, dict) else {}


@functools.cache
def committed_digest(commit: str, name: str) -> str:
    """``drafter_digest`` of a packaged drafter over its files as committed at ``commit``, or why not."""
    try:
        listing = git("ls-tree", "-r", "--name-only", commit, "--", f"{DRAFTS}/{name}/").decode().split()
    except subprocess.CalledProcessError:
        return "not hashed (commit not in this repository)"
    files = sorted(f for f in listing if f.endswith(".safetensors"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(git("show", f"{commit}:{path}"))
    return digest.hexdigest()[:16] if files else "not packaged"


def digests(commits: tuple[str, ...], name: str) -> str:
    """A packaged drafter's digest at each commit: one value where they agree, else each with its commit."""
    found = [committed_digest(commit, name) for commit in commits]
    each = ", ".join(f"{digest} at {commit}" for digest, commit in zip(found, commits, strict=True))
    return found[0] if len(set(found)) == 1 else f"{each} (which one ran is not recorded)"


def bracket(rel: str, date: str | None) -> tuple[str | None, str]:
    """Last commit before the run time (None if unknown); the page's first commit after it, else its last."""
    log = [line.split() for line in git("log", "--format=%h %cI", "--", rel).decode().splitlines()]
    if not log:
        raise SystemExit(f"{rel}: not in git yet; commit it first")
    try:
        run_at = datetime.datetime.fromisoformat(str(date).removesuffix(" UTC")).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None, log[0][0]
    page = next((c for c, t in reversed(log) if datetime.datetime.fromisoformat(t) >= run_at), log[0][0])
    return git("log", "-1", "--format=%h", f"--before={run_at}", "HEAD").decode().strip() or None, page


def weights(text: str, data: dict, digest_of: Callable[[str], str]) -> list[str]:
    """One entry per drafter with weights that the page names: as recorded by the run (``drafters`` or
    ``config.drafter_digests`` in its JSON), hashed from git, or a local folder nobody hashed."""
    recorded = (data.get("drafters"), (data.get("config") or {}).get("drafter_digests"))
    found = next((f for f in recorded if isinstance(f, dict) and f), {})  # a list of specs: no digests
    by_name = {str(spec).split("+")[-1].split(":")[-1]: str(dig) for spec, dig in found.items() if dig}
    entries = []
    for name in sorted(p.name for p in (ROOT / DRAFTS).iterdir() if p.is_dir()):
        if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w-])", text):
            run_said = by_name.pop(name, None)
            entries.append(f"{name} {f'{run_said} (recorded by the run)' if run_said else digest_of(name)}")
    entries += [f"{spec} {dig} (recorded by the run)" for spec, dig in by_name.items()]
    for folder in dict.fromkeys(LOCAL_FOLDER.findall(text)):
        if folder not in by_name and not re.search(rf"{re.escape(folder)}.*sha256", text, re.IGNORECASE):
            entries.append(f"{folder} (local folder, digest not recorded)")
    return entries


def provenance(page: Path, today: str) -> str:
    """The ``Provenance:`` paragraph for one page, from its raw JSON where it has the facts, else git."""
    text = page.read_text()
    path, data = raw_json(text)
    machine = data.get("machine") if isinstance(data.get("machine"), dict) else {}
    commit, date, where = machine.get("commit"), machine.get("date") or data.get("date"), f"from {path}"
    if not date and (match := TEXT_DATE.search(text)):
        date, where = match.group(1), "as this file states it"
    run = f"run {date} ({where})" if date else "run date not recorded"
    before, landed = bracket(page.relative_to(ROOT).as_posix(), date)
    if commit:  # machine_info records the date with it
        ref, dirty = str(commit).removesuffix("+dirty"), str(commit).endswith("+dirty")
        run = f"run {date}, source commit {ref[:7]}{'+dirty' * dirty} ({where})"
        at, commits = f"as committed at {ref[:7]}", (ref,)
        at += " (the run's tree had uncommitted changes)" * dirty
    elif before:
        run += f"; source commit not recorded (latest commit then: {before}; this file committed in {landed})"
        at, commits = f"as committed at {before}, and at {landed} where that differs", (before, landed)
    else:
        run += f"; source commit not recorded: code at or before {landed}, which committed this file"
        at, commits = f"as committed at {landed}", (landed,)
    listed = ", ".join(weights(text, data, functools.partial(digests, commits)))
    drafters = f"drafter weights (sha256 of the safetensors, first 16 hex; packaged ones {at}): {listed}"
    return (
        f"Provenance: {run}; {drafters if listed else 'no drafter weights named in this file'}. Added by "
        f"benchmarks/provenance.py on {today}; the rest of this file is as the run wrote it."
    )


def stamp(page: Path, today: str, dry_run: bool = False) -> str:
    """Insert the paragraph after the page's first ``# `` heading; say what was done."""
    rel, lines = page.relative_to(ROOT).as_posix(), page.read_text().splitlines(keepends=True)
    if any(line.startswith("Provenance:") for line in lines):
        return f"{rel}: skipped (already has a Provenance: line)"
    heading = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)  # none: at the top
    paragraph, rest = provenance(page, today), lines[heading + 1 :]
    insert = ["\n", paragraph + "\n"] + (["\n"] if rest and rest[0].strip() else [])
    if not dry_run:
        page.write_text("".join(lines[: heading + 1] + insert + rest))
    return f"{rel}: {'would add' if dry_run else 'added'} {paragraph}"


def main(argv: list[str] | None = None) -> None:
    """Stamp every results page (``benchmarks/*.md`` but SKIPPED, and a root page if there is one); one
    line each."""
    dry_run = "--dry-run" in (sys.argv[1:] if argv is None else argv)  # print the paragraphs, write nothing
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    pages = [p for p in sorted((ROOT / "benchmarks").glob("*.md")) if p.name not in SKIPPED]
    for page in [*pages, *[p for p in [ROOT / "BENCHMARKS.md"] if p.is_file()]]:
        print(stamp(page, today, dry_run))


if __name__ == "__main__":
    main()
