"""Milliseconds of SmolLM2's steps for BiTA's block at a shape (default `2`: pending token, 2 nodes, 3 masks,
6 positions; `1`: 4), taken apart: token ids causal, with BiTA's tree mask, with its given mask embeddings,
both, and the whole block (the masks also see the 16 reserved prompt slots), against a one-token step, on the
eager and the compiled engine, after a 256-token prompt, alternating, median of N. Session 2026-11-30
(fifty-first), issue 20, CAMPAIGN next run 4: compiled BiTA blocks cost 1.23-1.36 steps on the bench where a
compiled 4-token block with 2 given embeddings costs 1.03 alone (embeds-block-probe-2026-11-30.py).

    python benchmarks/campaigns/bita-block-probe-2026-11-30.py [N] [SHAPE]
"""

import sys

import torch

from specdec.benchmarks.step_timing import interleaved_medians
from specdec.decoders.blocks import verify_block
from specdec.drafters.bita import BiTADrafter
from specdec.engine import Engine
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter
from specdec.models.packaged import packaged_bitas


def bita_block(drafter: BiTADrafter, engine: Engine) -> tuple[torch.Tensor, dict]:
    """The block BiTA's drafter hands the target at its shape, with candidates from random mask logits."""
    drafter.attach(engine)
    drafter.mask_logits = torch.randn(1, drafter.num_masks, engine.model.config.vocab_size)
    draft = drafter.propose(8, None, None)
    return verify_block(torch.tensor([5]), draft)


def kinds(block: torch.Tensor, options: dict) -> dict[str, tuple[torch.Tensor, dict]]:
    """The whole block and its parts, each as wide as the block."""
    tree = {"tree_mask": options["tree_mask"]}
    given = {"embeds": options["embeds"], "embeds_mask": options["embeds_mask"]}
    ids = torch.randint(3, 40_000, block.shape, generator=torch.Generator().manual_seed(2))
    return {
        "one token": (block[:, :1], {}),
        f"{block.shape[1]} token ids": (ids, {}),
        "+ tree mask": (ids, tree),
        "+ given embeds": (block, given),
        "+ tree mask + embeds": (block, {**tree, **given}),
        "whole block (+ reserved)": (block, options),
    }


def main(rounds: int, shape: str) -> None:
    model = load_model("smollm2-135m").model.eval()
    adapter = BiTAAdapter.from_pretrained(packaged_bitas()["smollm2-135m-bita"])
    drafter = BiTADrafter(adapter, shape)
    prompt = torch.randint(3, 40_000, (1, 256), generator=torch.Generator().manual_seed(0))
    for label, compile_ in (("eager", False), ("compiled", True)):
        engine = Engine(model, compile=compile_)
        engine.reset(1, 512, reserved=drafter.reserved_slots)
        with torch.inference_mode():
            engine.write_reserved(adapter.prefix(model))
            engine.prefill([prompt[0].tolist()])
            cases = kinds(*bita_block(drafter, engine))
        medians = interleaved_medians(engine, cases, rounds)
        for name, median in medians.items():
            ms, steps = median * 1e3, median / medians["one token"]
            print(f"{label:8s} {name:26s} {ms:6.2f} ms  {steps:.2f} steps", flush=True)
    print(f"shape {shape}, torch {torch.__version__}, threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30, sys.argv[2] if len(sys.argv) > 2 else "2")
