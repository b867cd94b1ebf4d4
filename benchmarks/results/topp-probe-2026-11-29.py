"""Top-p before and after NUCLEUS_BOUNDS + Entries (this commit) on SmolLM2's own logits, in one process.

Logits: SmolLM2-135M-Instruct sampling (HF generate, T 0.8, top-p 0.95, torch seed 0) on 2 Spec-Bench
prompts per task x 64 new tokens. The old implementation is read from git (701e35d). Checks that both give
bitwise the same float64 distributions (four configs) and the same keyed draws, then times old
`draws.sample(logits_to_probs(...))` against new `draws.sample(sampling_distribution(...))`, interleaved
row by row (1 thread), on one row and on five rows at a time.
Run: PYTHONPATH=src python benchmarks/results/topp-probe-2026-11-29.py (needs ../shared; ~4 min).
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from specdec.benchmarks.data import load_spec_bench
from specdec.models import load_model
from specdec.sampling import SamplingConfig, logits_to_probs, sampling_distribution
from specdec.sampling.noise import KeyedDraws, row_keys

OLD_COMMIT = "701e35d"
SPEC_BENCH = Path(os.environ.get("SPEC_BENCH", "../shared/data/eval/spec_bench/question.jsonl"))


def old_module():
    source = subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:src/specdec/sampling/processors.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "processors_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("processors_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def collect() -> torch.Tensor:
    torch.manual_seed(0)
    loaded = load_model("smollm2-135m")
    rows = []
    for item in load_spec_bench(SPEC_BENCH, 2):
        ids = loaded.tokenizer.apply_chat_template(
            [{"role": "user", "content": item["prompt"]}],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )["input_ids"]
        out = loaded.model.generate(
            ids,
            do_sample=True,
            temperature=0.8,
            top_p=0.95,
            max_new_tokens=64,
            output_logits=True,
            return_dict_in_generate=True,
        )
        rows.extend(step[0] for step in out.logits)
    return torch.stack(rows).float()


def main() -> None:
    old = old_module()
    logits = collect()
    torch.set_num_threads(1)
    print(f"{len(logits)} rows of {logits.shape[-1]} logits")
    for t, p in ((0.8, 0.95), (1.0, 0.9), (0.6, 0.5), (1.3, 0.99)):
        a = old.logits_to_probs(logits, old.SamplingConfig(t, 0, p))
        b = logits_to_probs(logits, SamplingConfig(temperature=t, top_p=p))
        scaled = (logits.double() - logits.double().amax(-1, keepdim=True)) / t
        s = torch.softmax(scaled, -1).sort(-1, descending=True).values
        size = ((s.cumsum(-1) - s) < p).sum(-1).double()
        q = size.quantile(torch.tensor([0.5, 0.9, 0.99, 1.0], dtype=torch.float64)).tolist()
        print(f"T {t} top-p {p}: old == new bitwise: {torch.equal(a, b)}; nucleus size q50/q90/q99/max {q}")
    cfg, ocfg = SamplingConfig(temperature=0.8, top_p=0.95), old.SamplingConfig(0.8, 0, 0.95)
    for label, batches in (
        ("one row", [logits[i : i + 1] for i in range(0, len(logits), 3)]),
        ("five rows", [logits[i : i + 5] for i in range(0, len(logits) - 5, 20)]),
    ):
        t_old = t_new = 0.0
        same = 0
        for rep in range(3):
            for j, batch in enumerate(batches):
                draws = KeyedDraws(row_keys(list(range(len(batch))), 1), [rep * 1000 + j] * len(batch))
                start = time.perf_counter()
                a = draws.sample(old.logits_to_probs(batch, ocfg), 0)
                t_old += time.perf_counter() - start
                start = time.perf_counter()
                b = draws.sample(sampling_distribution(batch, cfg), 0)
                t_new += time.perf_counter() - start
                same += int(torch.equal(a, b))
        n = 3 * len(batches)
        print(
            f"{label} (T 0.8, top-p 0.95): old {t_old / n * 1e6:.0f} us, new {t_new / n * 1e6:.0f} us "
            f"a call, {t_old / t_new:.2f}x; identical draws {same}/{n}"
        )
    print(
        "machine:",
        subprocess.run(["lscpu"], capture_output=True, text=True)
        .stdout.split("Model name:")[1]
        .splitlines()[0]
        .strip(),
        "| torch",
        torch.__version__,
    )


if __name__ == "__main__":
    sys.exit(main())
