"""Does a static-shape compiled step pay on this CPU? (issue 11's compile-or-not decision)

For each model (the target, or a draft spec) and block width W, after a 256-token context, median
wall time of:

- ``engine``: our eager ``Engine.extend`` + rollback (packed oneDNN linears, slot cache, masks over
  the slots in use) — what every decoder runs today;
- ``static eager``: the same model forward with every input fixed in shape — the slot cache in its
  static mode (read over its full capacity, keys/values written with ``index_copy_`` at slot indices
  given as a tensor), a [1, 1, W, capacity] mask — run eagerly;
- ``static compiled``: that function under ``torch.compile(dynamic=False, fullgraph=True)`` (inductor),
  the packed linears kept as the opaque ``specdec::packed_linear`` op (inductor cannot lower oneDNN's
  packed weight, and its own GEMMs are neither faster at these sizes nor batch-invariant);
- ``lean layers``: the decoder layers called one by one with precomputed rotary tables and mask
  (transformers' own modules, no model-level wrappers) — the "lean per-layer driver" option.

The compile time of each (model, W) is reported. Writes JSON + markdown; a probe, not library code.

    python benchmarks/compile_probe.py --models target,vocab-2048:bf16:smollm2-135m-draft --widths 1,4
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial
from pathlib import Path

import torch
from torch import nn

from specdec.benchmarks.report import machine_info
from specdec.drafters import make_drafter
from specdec.engine import Engine, pack_linear_layers
from specdec.engine.cache import SlotCache
from specdec.engine.modeling import with_cache
from specdec.models import load_model
from specdec.models.draft_vocab import trim_output_head

CAPACITY, CONTEXT = 512, 256


def models_for(spec: str, target) -> tuple[Engine, nn.Module]:
    """Our engine for ``spec``, and a packed copy of the same model (its linears compile as one opaque
    op, ``specdec::packed_linear``)."""
    if spec == "target":
        model, engine = target.model, Engine(target.model)
    else:
        drafter = make_drafter(spec, target.model, target.tokenizer)
        engine = drafter.engine
        model = drafter.model if drafter.vocab is None else trim_output_head(drafter.model, drafter.vocab)
    return engine, pack_linear_layers(model)


def median_ms(fn, steps: int) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


@torch.inference_mode()
def probe(spec: str, target, widths: list[int], steps: int) -> dict:
    engine, model = models_for(spec, target)
    vocab = min(2000, model.config.vocab_size)
    context = torch.randint(3, vocab, (1, CONTEXT), generator=torch.Generator().manual_seed(0))
    cache = SlotCache(model.config.num_hidden_layers, CAPACITY)  # with ``slots`` set: static shapes

    def step(ids, positions, mask):
        kwargs = {"logits_to_keep": 1} if ids.shape[1] == 1 else {}
        inputs = {"input_ids": ids, "position_ids": positions, "attention_mask": mask}
        return model(**inputs, **with_cache(model, cache), **kwargs).logits

    cache.slots = torch.arange(CONTEXT)
    prefill_mask = torch.zeros(1, 1, CONTEXT, CAPACITY, dtype=torch.bool)
    prefill_mask[0, 0, :, :CONTEXT] = torch.ones(CONTEXT, CONTEXT, dtype=torch.bool).tril()
    step(context, torch.arange(CONTEXT)[None], prefill_mask)
    engine.reset(1, CAPACITY)
    engine.extend(context)
    inner, rows = model.model, {}
    for width in widths:
        ids = torch.full((1, width), 5)
        positions = torch.arange(CONTEXT, CONTEXT + width)[None]
        cache.slots = torch.arange(CONTEXT, CONTEXT + width)
        mask = torch.zeros(1, 1, width, CAPACITY, dtype=torch.bool)
        mask[0, 0, :, :CONTEXT] = True
        mask[0, 0, :, CONTEXT : CONTEXT + width] = torch.ones(width, width, dtype=torch.bool).tril()
        compiled = torch.compile(step, dynamic=False, fullgraph=True)
        started = time.perf_counter()
        compiled(ids, positions, mask)
        compile_s = time.perf_counter() - started
        rotary = inner.rotary_emb(inner.embed_tokens(ids), positions)

        def lean(ids=ids, positions=positions, mask=mask, rotary=rotary):
            hidden = inner.embed_tokens(ids)
            for layer in inner.layers:
                hidden = layer(
                    hidden,
                    attention_mask=mask,
                    position_ids=positions,
                    **with_cache(layer, cache),
                    position_embeddings=rotary,
                )
            return model.lm_head(inner.norm(hidden[:, -1:]))

        def ours(ids=ids, width=width):
            engine.extend(ids)
            engine.rollback(width)

        variants = {
            "engine": ours,
            "static eager": partial(step, ids, positions, mask),
            "static compiled": partial(compiled, ids, positions, mask),
            "lean layers": lean,
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(3):  # interleaved rounds: drift on a shared VM hits every variant alike
            for name, fn in variants.items():
                times[name].append(median_ms(fn, steps))
        rows[str(width)] = {name: statistics.median(t) for name, t in times.items()}
        rows[str(width)]["compile_s"] = compile_s
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="smollm2-135m")
    parser.add_argument("--models", default="target,vocab-2048:bf16:smollm2-135m-draft")
    parser.add_argument("--widths", default="1,4")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/compile_probe.json"))
    parser.add_argument("--markdown", type=Path, default=Path("benchmarks/COMPILE_PROBE.md"))
    args = parser.parse_args()
    target = load_model(args.target)
    widths = [int(w) for w in args.widths.split(",")]
    results = {spec: probe(spec, target, widths, args.steps) for spec in args.models.split(",")}
    report = {"machine": machine_info(), "config": vars(args) | {"out": str(args.out)}, "results": results}
    report["config"]["markdown"] = str(args.markdown)
    args.out.write_text(json.dumps(report, indent=1))
    m = report["machine"]
    lines = [
        "# Static-shape compiled step: does it pay on this CPU?",
        "",
        f"Produced by `python benchmarks/compile_probe.py --models {args.models} --widths {args.widths} "
        f"--steps {args.steps}` on {m['date']} ({m['cpu']}, {', '.join(m.get('cpu_features', []))}, "
        f"{m['cores']} cores, torch {m['torch']}, transformers {m['transformers']}). One block of W tokens "
        f"after {CONTEXT}, static capacity {CAPACITY}; median of {args.steps} steps, median of 3 "
        "interleaved rounds. Variants: see the script's docstring. ratio: static compiled / engine.",
        "",
        "| model | W | engine (ms) | static eager | static compiled | lean layers | compiled / engine | "
        "compile (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, rows in results.items():
        for width, r in rows.items():
            lines.append(
                f"| {spec} | {width} | {r['engine']:.2f} | {r['static eager']:.2f} | "
                f"{r['static compiled']:.2f} | {r['lean layers']:.2f} | "
                f"{r['static compiled'] / r['engine']:.2f} | {r['compile_s']:.1f} |"
            )
    args.markdown.write_text("\n".join(lines) + "\n")
    print(args.markdown.read_text())


if __name__ == "__main__":
    main()
