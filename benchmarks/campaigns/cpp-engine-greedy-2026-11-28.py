"""Greedy decoding with our engine compiled on inductor's C++ GEMM template (cpp-engine-probe-2026-11-28.py's
settings) against the eager packed engine and HF `generate`: are the tokens the same?

A check for CAMPAIGN next run 4 before wiring the template in: PROMPTS Spec-Bench-like chat prompts written
here (not evaluation data), each decoded greedily for TOKENS tokens by a one-token-step loop on each engine
and by HF `generate` (compared up to HF's end-of-text token); prints, per prompt, whether each engine's
tokens equal HF's.

    python benchmarks/campaigns/cpp-engine-greedy-2026-11-28.py \
        > benchmarks/results/cpp_engine_greedy_2026-11-28.log
"""

from __future__ import annotations

import torch
import torch._inductor.config as inductor

from specdec.engine import Engine
from specdec.models import load_model

PROMPTS = [
    "Explain why the sky is blue in two sentences.",
    "Write a short poem about a cat watching rain.",
    "What is 17 times 23? Show your steps.",
    "Give three tips for writing clear Python code.",
    "Summarise the plot of Romeo and Juliet.",
    "Translate to French: The library opens at nine.",
    "List the planets of the solar system in order.",
    "How do I reverse a string in Python?",
]
TOKENS = 64


@torch.inference_mode()
def greedy(engine: Engine, ids: torch.Tensor) -> list[int]:
    engine.reset(1, ids.shape[1] + TOKENS + 8)
    logits = engine.extend(ids).logits[:, -1]
    out = []
    for _ in range(TOKENS):
        token = logits.argmax(-1, keepdim=True)
        out.append(int(token))
        logits = engine.extend(token).logits[:, -1]
    return out


def main() -> None:
    inductor.freezing, inductor.max_autotune, inductor.max_autotune_gemm_backends = True, True, "CPP"
    target = load_model("smollm2-135m")
    packed = Engine(target.model, pack_weights=True)
    cpp = Engine(target.model, pack_weights=False, warm_up=False)
    cpp.compile_steps(one_token=True)
    for prompt in PROMPTS:
        text = target.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False)
        ids = target.tokenizer(text, return_tensors="pt").input_ids
        with torch.inference_mode():
            hf = target.model.generate(ids, max_new_tokens=TOKENS, do_sample=False)
        hf_tokens = hf[0, ids.shape[1] :].tolist()  # up to its end-of-text token, if it writes one
        engines = (("packed", packed), ("cpp", cpp))
        same = {name: greedy(engine, ids)[: len(hf_tokens)] == hf_tokens for name, engine in engines}
        print(f"{prompt[:40]!r}: packed == HF {same['packed']}, cpp == HF {same['cpp']}", flush=True)


if __name__ == "__main__":
    main()
