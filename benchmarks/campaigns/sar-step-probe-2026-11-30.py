"""Seconds per BiTA training step (forward + backward, bf16 autocast as `train bita --bf16 on`) of the packed
SAR pass as committed at a given commit against the working tree's, on the same batches of the committed chat
answers, alternating, in one process. Session 2026-11-30 (fiftieth), issue 20: the sequence run once without
autograd before the masks' pass, against one joint pass over sequence and masks.

    python benchmarks/campaigns/sar-step-probe-2026-11-30.py BASE_COMMIT [--steps 4] [--batch 8] [--groups 64]
"""

import argparse
import glob
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from specdec.drafters.factory import bita_folder
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter
from specdec.training import sar
from specdec.training.answers import read_answers


def module_at(commit: str):
    """specdec.training.sar as committed at ``commit``."""
    source = subprocess.run(
        ["git", "show", f"{commit}:src/specdec/training/sar.py"], capture_output=True, check=True, text=True
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("sar_base", file.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--groups", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = load_model("smollm2-135m").model.requires_grad_(False).eval()
    adapter = BiTAAdapter.from_pretrained(bita_folder("smollm2-135m-bita")).train()
    files = sorted(glob.glob("benchmarks/data/self-intents-*/answers-*.jsonl.gz"))[:2]
    answers = [a for f in files for a in read_answers(Path(f))]
    base = module_at(args.base)
    times = {"base": [], "tree": []}
    generator = torch.Generator().manual_seed(0)
    for step in range(args.steps + 1):  # the first round warms both up and is not counted
        picks = torch.randint(0, len(answers), (args.batch,), generator=generator).tolist()
        batch = sar.sar_batch([answers[i] for i in picks], args.groups, adapter.num_masks, 256, generator)
        losses = {}
        for name, module in (("base", base), ("tree", sar)):
            adapter.zero_grad()
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = module.sar_logits(model, adapter, batch)
            loss = sar.sar_loss(logits, batch["labels"])
            loss.backward()
            if step:
                times[name].append(time.perf_counter() - start)
            losses[name] = loss.item()
        print(f"step {step}: loss base {losses['base']:.4f} tree {losses['tree']:.4f}", flush=True)
    sar_tokens = int((batch["labels"] != sar.IGNORE).sum())
    for name, spent in times.items():
        each = ", ".join(f"{t:.2f}" for t in spent)
        print(f"{name}: {sum(spent) / len(spent):.2f} s a step (each: {each})")
    print(f"tree / base: {sum(times['tree']) / sum(times['base']):.3f}; ~{sar_tokens} SAR tokens a step")
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
