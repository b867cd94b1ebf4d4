"""Milliseconds of SmolLM2's compiled CPU steps: a one-token step, a 4-token block of token ids, and the
same block with its last two positions given by embeddings (BiTA's masks run this way), against the
eager engine's, after a 256-token prompt, alternating, median of N. Session 2026-11-30 (fiftieth),
issue 20: compiled BiTA blocks of 4 cost 1.23 steps on the bench where token-id blocks cost 1.00-1.08.

    python benchmarks/campaigns/embeds-block-probe-2026-11-30.py [N]
"""

import statistics
import sys
import time

import torch

from specdec.engine import Engine
from specdec.models import load_model


def timed(engine: Engine, tokens: torch.Tensor, **options) -> float:
    """One block's milliseconds; the cache is rolled back after it."""
    start = time.perf_counter()
    engine.extend(tokens, **options)
    spent = (time.perf_counter() - start) * 1e3
    engine.rollback(tokens.shape[1])
    return spent


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
            for tokens, options in kinds.values():  # compiles any graph not built yet
                timed(engine, tokens, **options)
            times = {name: [] for name in kinds}
            for _ in range(rounds):
                for name, (tokens, options) in kinds.items():
                    times[name].append(timed(engine, tokens, **options))
        base = statistics.median(times["one token"])
        for name, spent in times.items():
            median = statistics.median(spent)
            print(f"{label:8s} {name:26s} {median:6.2f} ms  {median / base:.2f} steps", flush=True)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
