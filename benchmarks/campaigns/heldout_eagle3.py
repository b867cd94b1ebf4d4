"""Held-out scores of EAGLE-3 heads per primary cache: greedy agreement at each depth and the tokens a chain
of 4 gets accepted, on each cache's held-out tail (the sequences `train eagle3` never trains on).

Why: checkpoint selection scores one mixed set; a new source (e.g. RAG-length passages) can move its own
sequences a lot and the mix little, so each head is scored here source by source, in one run.

    python benchmarks/campaigns/heldout_eagle3.py --cache runs/primary-intents4 \
        --cache runs/primary-passages1 --head old=runs/eagle3-7250 --head new=runs/eagle3-chat4/best \
        --sequences 48 --out benchmarks/results/heldout_eagle3_X.json --markdown benchmarks/HELDOUT_X.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from specdec.benchmarks.report import machine_info
from specdec.models import load_model
from specdec.models.eagle3_layout import load_head
from specdec.models.packaged import drafter_digest
from specdec.training.eagle3 import evaluate_head
from specdec.training.primary_cache import PrimaryCache, split


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", action="append", required=True, type=Path)
    parser.add_argument("--head", action="append", required=True, help="NAME=FOLDER")
    parser.add_argument("--sequences", type=int, default=48, help="held-out sequences per cache")
    parser.add_argument(
        "--whole",
        action="store_true",
        help="score each cache from its first sequence "
        "(for caches no head trained on, e.g. the target's answers to evaluation prompts)",
    )
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--markdown", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    embeddings = load_model(args.target).model.get_input_embeddings().weight.float()
    heads = {name: Path(folder) for name, _, folder in (h.partition("=") for h in args.head)}
    rows, started = [], time.perf_counter()
    for folder in args.cache:
        cache = PrimaryCache(folder)
        heldout = list(range(len(cache)) if args.whole else split(cache, 0.05)[1])[: args.sequences]
        for name, path in heads.items():
            scores = evaluate_head(load_head(path), embeddings, cache, heldout, args.depth)
            rows.append({"cache": folder.name, "sequences": len(heldout), "head": name} | scores)
            print(json.dumps(rows[-1]), flush=True)
    record = {
        "command": " ".join(sys.argv),
        "heads": {
            name: {"folder": str(path), "sha256_16": drafter_digest(str(path))}
            for name, path in heads.items()
        },
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine_info(),
    }
    args.out.write_text(json.dumps(record, indent=1))
    lines = [
        "# EAGLE-3 heads, held-out per cache",
        "",
        f"Written by `benchmarks/campaigns/heldout_eagle3.py`; raw: `{args.out}`.",
        f"Command: `{record['command']}`.",
        "Heads: " + ", ".join(f"`{n}` {h['sha256_16']} ({h['folder']})" for n, h in record["heads"].items()),
        "",
        ("Sequences: each cache's first ones (--whole; caches no head trained on). " if args.whole else "")
        + "Greedy agreement with the target's next token at depth 1..4 of the head's own chain "
        "(teacher-forced start), and accepted tokens per chain of 4 (chains whose 4 positions are all answer "
        "tokens).",
        "",
        "| cache | sequences | head | depth 1 | depth 2 | depth 3 | depth 4 | accepted / chain of 4 |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        depths = [r["heldout_agreement"]] + [r[f"heldout_agreement_d{j}"] for j in range(1, args.depth)]
        cells = " | ".join(f"{d:.3f}" for d in depths)
        lines.append(
            f"| {r['cache']} | {r['sequences']} | {r['head']} | {cells} | {r['accepted_per_chain']:.3f} |"
        )
    args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
