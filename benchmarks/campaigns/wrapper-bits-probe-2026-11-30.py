"""Whether a compiled CPU step's logits depend on inductor's wrapper: a tiny random Llama (the tests'
own) compiled with the shipped C++ wrapper and with the Python one; its eager prefill, a one-token step
and a 5-token block compared bit for bit. Session 2026-11-30 (fifty-first): the tests compile with the
Python wrapper (half their build time) except one marked ``shipped_compile``; this is the check behind
that choice.

    python benchmarks/campaigns/wrapper-bits-probe-2026-11-30.py
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from specdec.engine import Engine, compiling
from tiny import make_llama


def main() -> None:
    model = make_llama(500, seed=2, hidden=64)
    tokens = torch.randint(3, 500, (2, 40), generator=torch.Generator().manual_seed(0))
    runs = []
    for wrapper in (True, False):
        compiling.CPU_STEP_OPTIONS["cpp_wrapper"] = wrapper
        torch._dynamo.reset()
        engine = Engine(model)
        engine.compile_steps(one_token=True)
        engine.reset(2, 64)
        with torch.inference_mode():
            blocks = (tokens[:, :10], tokens[:, 10:11], tokens[:, 11:16])
            runs.append([engine.extend(block).logits for block in blocks])
    equal = [torch.equal(a, b) for a, b in zip(*runs, strict=True)]
    print(f"prefill (eager), one token, 5 tokens equal bit for bit: {equal}; torch {torch.__version__}")


if __name__ == "__main__":
    main()
