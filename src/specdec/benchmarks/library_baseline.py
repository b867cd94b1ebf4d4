"""The library's own speedup on the requests a server load test sends at concurrency 1: the same chat
requests through :meth:`~specdec.pipeline.Pipeline.generate` in this process, each plain and then
speculative (alternating, so drift between the two is shared), so a server's speculative speedup at one
request can be set beside what the library gets without HTTP, streaming or a scheduler thread."""

from __future__ import annotations

import time

from specdec.drafters import make_drafter
from specdec.models import load_model
from specdec.pipeline import Pipeline


def library_speedup(model: str, drafter: str, mix: list[dict]) -> dict:
    """Tokens/s of plain and speculative decoding over ``mix`` (OpenAI chat bodies: messages, max_tokens,
    temperature, top_p, seed), one request at a time, and their ratio."""
    target = load_model(model)
    pipe = Pipeline(
        target.model, target.tokenizer, drafter=make_drafter(drafter, target.model, target.tokenizer)
    )
    seconds, tokens = {"off": 0.0, "server": 0.0}, {"off": 0, "server": 0}
    for i, body in enumerate([mix[0], *mix]):  # the first request once more, untimed: warm-up
        options = {
            "max_new_tokens": body["max_tokens"],
            "temperature": body.get("temperature", 1.0),
            "top_p": body.get("top_p", 1.0),
            "seed": body.get("seed"),
        }
        for method, name in (("plain", "off"), ("sps", "server")):
            began = time.perf_counter()
            result = pipe.generate(body["messages"], method=method, **options)
            if i:
                seconds[name] += time.perf_counter() - began
                tokens[name] += len(result.token_ids[0])
    rates = {name: tokens[name] / seconds[name] for name in seconds}
    return {
        "requests": len(mix),
        "tokens_per_s_off": rates["off"],
        "tokens_per_s_speculative": rates["server"],
        "speedup": rates["server"] / rates["off"],
    }
