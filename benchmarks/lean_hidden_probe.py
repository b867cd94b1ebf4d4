"""What a verify pass that returns hidden states costs through the lean forward against the model's own
forward (the engine's two paths for EAGLE-3's and Tandem's verify passes), on the built-in target.

For each batch size and block width, after a context of ``--context`` tokens per row: the median wall time
of ``Engine.extend(block, hidden_layers=L)`` followed by a rollback of the block, on two engines over the
same weights (``lean=None``: the lean path, ``lean=False``: the model's forward), interleaved call by call
so the machine's drift hits both. A plain one-token step of the lean engine is timed beside them (the
unit of T(γ+1)/T(1)). Writes JSON + markdown; a probe, not library code.

    python benchmarks/lean_hidden_probe.py --out benchmarks/results/lean_hidden_probe_DATE.json \\
        --markdown benchmarks/LEAN_HIDDEN_PROBE_DATE.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from specdec.benchmarks.report import machine_info
from specdec.engine import Engine
from specdec.models import load_model
from specdec.models.eagle3 import default_aux_layers


def timed(engine: Engine, block: torch.Tensor, layers: tuple[int, ...]) -> float:
    began = time.perf_counter()
    engine.extend(block, hidden_layers=layers)
    seconds = time.perf_counter() - began
    engine.rollback(torch.full((block.shape[0],), block.shape[1]))
    return seconds


@torch.inference_mode()
def probe(args: argparse.Namespace) -> list[dict]:
    model = load_model(args.model).model
    engines = {"lean": Engine(model), "model forward": Engine(model, lean=False)}
    assert engines["lean"].lean_hidden, "the lean path does not reproduce this model's hidden states"
    layers = default_aux_layers(model.config.num_hidden_layers)
    gen = torch.Generator().manual_seed(0)
    rows = []
    for batch in args.batches:
        context = torch.randint(3, model.config.vocab_size, (batch, args.context), generator=gen)
        for engine in engines.values():
            engine.reset(batch, args.context + 32)
            engine.extend(context)
        for width in args.widths:
            block = torch.randint(3, model.config.vocab_size, (batch, width), generator=gen)
            times = {name: [] for name in [*engines, "plain one-token step"]}
            for _ in range(args.repeats + 2):  # the first two: warm-up, dropped below
                for name, engine in engines.items():
                    times[name].append(timed(engine, block, layers))
                times["plain one-token step"].append(timed(engines["lean"], block[:, :1], ()))
            medians = {name: statistics.median(t[2:]) for name, t in times.items()}
            rows.append({"batch": batch, "width": width, "hidden_layers": list(layers), "median_s": medians})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Verify passes with hidden states: the lean forward against the model's own",
        "",
        f"Produced by `{m['command']}` on {m['date']} ({m['cpu']}, {m['cores']} cores, torch {m['torch']}, "
        f"allocator {m['allocator']}). Target {report['model']}, context {report['context']} tokens per row, "
        f"hidden layers {report['rows'][0]['hidden_layers']} (EAGLE-3's), median of {report['repeats']} "
        "interleaved calls (extend, then rollback); T(1): the lean engine's plain one-token step.",
        "",
        "| batch | block | lean (ms) | model forward (ms) | lean / model forward | saved, in T(1) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        t = r["median_s"]
        lean, own, one = t["lean"], t["model forward"], t["plain one-token step"]
        lines.append(
            f"| {r['batch']} | {r['width']} | {1e3 * lean:.1f} | {1e3 * own:.1f} | {lean / own:.3f} | "
            f"{(own - lean) / one:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", required=True)
    parser.add_argument("--markdown", required=True)
    args = parser.parse_args()
    if Path(args.out).exists() or Path(args.markdown).exists():
        parser.error(f"{args.out} or {args.markdown} exists: a run never overwrites another's results")
    machine = {
        **machine_info(),
        "command": "python benchmarks/lean_hidden_probe.py " + " ".join(sys.argv[1:]),
    }
    rows = probe(args)
    report = {"machine": machine, "model": args.model, "context": args.context, "repeats": args.repeats}
    report["rows"] = rows
    Path(args.out).write_text(json.dumps(report, indent=1))
    Path(args.markdown).write_text(markdown(report))


if __name__ == "__main__":
    main()
