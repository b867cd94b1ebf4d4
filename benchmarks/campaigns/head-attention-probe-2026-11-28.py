"""The EAGLE-3 head's attention: key/value heads repeated per query head (``repeat_kv``, before) against
read in place by their group (``grouped_attention``, now), timed on the shipped head as drafted.

One call of the head (the default's int8 head, its oneDNN-packed copy as `Eagle3Drafter` holds it) on T
new pairs after S cached ones, for B rows, median of STEPS calls, the two attentions taking turns call
by call in one process: a row's chain step (B 1, T 1), a tree frontier (T 4), and served batches (B 8 and
16). Writes JSON.

    python benchmarks/campaigns/head-attention-probe-2026-11-28.py \
        --out benchmarks/results/head_attention_probe_2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import repeat_kv

from specdec.benchmarks.report import machine_info
from specdec.drafters import make_drafter
from specdec.models import load_model
from specdec.models.packaged import drafter_digest

SPEC = "int8:eagle3:smollm2-135m-eagle3"
CASES = [(1, 300, 1), (1, 300, 4), (1, 1000, 1), (8, 300, 2), (16, 600, 1)]  # (B, S, T)


def _repeated(query, key, value, mask):
    groups = query.shape[1] // key.shape[1]
    return F.scaled_dot_product_attention(
        query, repeat_kv(key, groups), repeat_kv(value, groups), attn_mask=mask
    )


def _call(head, inputs) -> float:
    start = time.perf_counter()
    head(*inputs)
    return time.perf_counter() - start


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    target = load_model("smollm2-135m")
    head = make_drafter(SPEC, target.model, target.tokenizer).head
    attention = head.layers[0].self_attn
    width, generator = head.config.hidden_size, torch.Generator().manual_seed(0)
    results = {}
    for batch, cached, new in CASES:
        past = tuple(
            torch.randn(batch, attention.kv_heads, cached, attention.head_dim, generator=generator)
            for _ in range(2)
        )
        inputs = (
            torch.randn(batch, new, width, generator=generator),
            torch.randn(batch, new, width, generator=generator),
            torch.arange(cached, cached + new).expand(batch, new),
            torch.ones(batch, 1, new, cached + new, dtype=torch.bool),
            past,
        )
        times: dict[str, list[float]] = {"repeat_kv": [], "grouped": []}
        for _ in range(args.steps):
            with mock.patch("specdec.models.eagle3.grouped_attention", _repeated):
                times["repeat_kv"].append(_call(head, inputs))
            times["grouped"].append(_call(head, inputs))
        results[f"B={batch} S={cached} T={new}"] = {
            k: round(1000 * statistics.median(v), 3) for k, v in times.items()
        }
    record = {
        "what": __doc__.splitlines()[0],
        "drafter": SPEC,
        "drafter_digest": drafter_digest(SPEC),
        "median_head_call_ms": results,
        "machine": machine_info(),
    }
    args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
