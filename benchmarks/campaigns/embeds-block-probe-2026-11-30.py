"""Milliseconds of SmolLM2's compiled CPU steps: a one-token step, a 4-token block of token ids, and the
same block with its last two positions given by embeddings (BiTA's masks run this way), against the
eager engine's, after a 256-token prompt, alternating, median of N. Session 2026-11-30 (fiftieth),
issue 20: compiled BiTA blocks of 4 cost 1.23 steps on the bench where token-id blocks cost 1.00-1.08.

    python benchmarks/campaigns/embeds-block-probe-2026-11-30.py [N]
"""

import sys

import torch

from specdec.benchmarks.step_timing import interleaved_medians
from specdec.engine import Engine
from specdec.models import load_model


def main(rounds: int) -> None:
    model = load_model("smollm2-135m").model.eval()
    prompt = torch.randint(3, 40_000, (1, 256), generator=torch.Generator().manual_seed(0))
    one, four = prompt[:, :1], prompt[:, :4]
    given = torch.randn(1, 4, model.config.hidden_size, generator=torch.Generator().manual_seed(1)) * 0.02
    replaced = torch.tensor([[False, False, True, True]])
    kinds = {
        "one token": (one, {}),
        "4 token ids": (four, {}),
        "4 with 2 given embeddings": (four, {"embeds": given, "embeds_mask": replaced}),
    }
    for label, compile_ in (("eager", False), ("compiled", True)):
        engine = Engine(model, compile=compile_)
        engine.reset(1, 512)
        with torch.inference_mode():
            engine.prefill([prompt[0].tolist()])
        medians = interleaved_medians(engine, kinds, rounds)
        for name, median in medians.items():
            ms, steps = median * 1e3, median / medians["one token"]
            print(f"{label:8s} {name:26s} {ms:6.2f} ms  {steps:.2f} steps", flush=True)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
