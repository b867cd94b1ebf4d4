"""How much of the target's greedy output a trimmed draft vocabulary can propose at all, per primary cache.

Why: every trained drafter here drafts from the target's 2,048 most frequent answer tokens (`vocab-2048:`,
the EAGLE-3 head's `d2t`). A token outside that set is never proposed, so its position is a sure rejection
whatever the drafter learned: coverage caps agreement. Scored at each answer position (the target's top-1 next
token, as the cache holds it), for the ranked vocabulary cut at several sizes and for a head's own `d2t`.

    python benchmarks/campaigns/vocab_coverage.py --vocab src/specdec/models/drafts/smollm2-135m-draft \
        --head src/specdec/models/drafts/smollm2-135m-eagle3 --cache runs/primary-intents4 \
        --out benchmarks/results/vocab_coverage_X.json --markdown benchmarks/VOCAB_COVERAGE_X.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from specdec.benchmarks.report import machine_info
from specdec.models.draft_vocab import VOCAB_FILE
from specdec.models.eagle3_layout import load_head
from specdec.training.primary_cache import PrimaryCache


def answer_argmax(cache: PrimaryCache, limit: int) -> np.ndarray:
    """The target's top-1 next token at every answer position of the first ``limit`` sequences."""
    chosen = []
    for index in range(min(len(cache), limit)):
        sequence = cache.sequence(index)
        chosen.append(np.asarray(sequence["topk_ids"])[np.asarray(sequence["next_is_answer"]), 0])
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", action="append", required=True, type=Path)
    parser.add_argument("--vocab", required=True, type=Path, help=f"a folder with {VOCAB_FILE}")
    parser.add_argument("--head", type=Path, help="an EAGLE-3 head folder: its own d2t scored too")
    parser.add_argument("--sizes", default="1024,2048,4096,8192,16384")
    parser.add_argument("--sequences", type=int, default=1000, help="at most this many per cache")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--markdown", type=Path, required=True)
    args = parser.parse_args(argv)
    ranked = np.asarray(json.loads((args.vocab / VOCAB_FILE).read_text())["token_ids"])
    sizes = [int(s) for s in args.sizes.split(",")]
    sets = {f"top-{n}": ranked[:n] for n in sizes}
    if args.head:
        sets["head d2t"] = load_head(args.head).draft_ids.numpy()
    rows = []
    for folder in args.cache:
        ids = answer_argmax(PrimaryCache(folder), args.sequences)
        row = {"cache": folder.name, "positions": int(ids.size)}
        row |= {name: float(np.isin(ids, kept).mean()) if ids.size else 0.0 for name, kept in sets.items()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    record = {"command": " ".join(sys.argv), "vocab_tokens_counted": len(ranked), "rows": rows}
    args.out.write_text(json.dumps(record | {"machine": machine_info()}, indent=1))
    names = list(sets)
    lines = [
        "# Draft vocabulary coverage of the target's greedy tokens",
        "",
        f"Written by `benchmarks/campaigns/vocab_coverage.py`; raw: `{args.out}`.",
        f"Command: `{record['command']}`.",
        "",
        "Share of answer positions whose target top-1 token lies in the set: the ceiling of greedy agreement "
        f"for a drafter proposing only from it. Ranking: `{args.vocab / VOCAB_FILE}` "
        f"({len(ranked)} distinct tokens seen).",
        "",
        "| cache | positions | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for r in rows:
        cells = " | ".join(f"{r[n]:.3f}" for n in names)
        lines.append(f"| {r['cache']} | {r['positions']} | {cells} |")
    args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
