"""Throughput probe before a BiTA campaign on a lent GPU: a random-weight model of SmolLM2-135M's shape
(same cost as the real one, nothing to send) trains a few steps of each prompt design at the campaign's
batch; prints and writes step time, evaluation time and peak memory, and the step count that fits the
budget. Usage: python bita_gpu_probe.py OUT.json TRAIN_SECONDS_PER_KIND BATCH GROUPS EVAL_EVERY"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specdec.benchmarks.engine_speed import SHAPES
from specdec.models.bita import BiTAAdapter, model_signature
from specdec.training.answers import TargetAnswer
from specdec.training.bita import BiTATrainConfig, train_bita

SMOLLM2 = SHAPES["smollm2-135m"] | {"max_position_embeddings": 8192}
PROBE_STEPS = 8


def main(out: str, per_kind_s: float, batch: int, groups: int, eval_every: int) -> None:
    generator = torch.Generator().manual_seed(0)
    answers = [
        TargetAnswer(
            torch.randint(3, 49152, (int(torch.randint(40, 120, (1,), generator=generator)),)).tolist(),
            torch.randint(3, 49152, (int(torch.randint(150, 250, (1,), generator=generator)),)).tolist(),
        )
        for _ in range(600)
    ]
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2)).eval()
    result: dict = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"}
    for kind in ("deep", "shallow", "none"):
        torch.cuda.reset_peak_memory_stats() if torch.cuda.is_available() else None
        adapter = BiTAAdapter(model_signature(model), 0 if kind == "none" else 16, 3, kind)
        with tempfile.TemporaryDirectory() as folder:
            config = BiTATrainConfig(
                output_dir=folder,
                steps=PROBE_STEPS,
                batch_size=batch,
                groups=groups,
                eval_every=PROBE_STEPS,
                save_every=PROBE_STEPS,
                eval_sequences=batch,
                bf16=True,
                heldout_fraction=0.25,
            )
            started = time.perf_counter()
            train_bita(model, adapter, answers, config)
            total = time.perf_counter() - started
            log = [json.loads(line) for line in (Path(folder) / "log.jsonl").read_text().splitlines()]
        step = (log[-1]["elapsed_s"] - log[2]["elapsed_s"]) / (PROBE_STEPS - 3)  # steps 4..8, warm
        evaluation = total - log[-1]["elapsed_s"]  # the last step's evaluation, its save and set-up
        peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else float("nan")
        result[kind] = {"step_s": step, "eval_s": evaluation, "total_s": total, "peak_gib": peak}
        print(kind, result[kind], flush=True)
    slowest = max(result[k]["step_s"] + result[k]["eval_s"] / eval_every for k in ("deep", "shallow", "none"))
    steps = int(per_kind_s / slowest) // eval_every * eval_every
    result["steps"] = max(eval_every, min(steps, 2000))
    result.update(per_kind_s=per_kind_s, batch=batch, groups=groups, eval_every=eval_every)
    Path(out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
