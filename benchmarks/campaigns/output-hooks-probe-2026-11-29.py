"""Probe: SmolLM2's compiled steps that return the EAGLE-3 head's hidden states, with transformers'
hidden-state hooks installed before compiling (``specdec.engine.static_steps._install_output_hooks``, as
the engine does) or left to the first compiled step that asks for them (``without``: the graph breaks at
the hooks' lock). One engine per process (a second compiled engine in a process reuses what the first
built): run it in pairs of processes, alternating. A 300-token context, 3 warm-up calls per shape, then
3 rounds of 30 calls per shape (a one-token step and a 5-token block with hidden states, and a one-token
step without them as the control); prints the graph breaks dynamo counted and the median call of the
median round.

    python benchmarks/campaigns/output-hooks-probe-2026-11-29.py with|without
"""

import statistics
import sys
import time

import torch
from torch._dynamo.utils import counters

from specdec.benchmarks.step_timing import primed_token
from specdec.drafters import make_drafter
from specdec.engine import Engine, static_steps
from specdec.models import load_model

mode = sys.argv[1]
if mode == "without":
    static_steps._install_output_hooks = lambda model, device: None
target = load_model("smollm2-135m")
head = make_drafter("eagle3:smollm2-135m-eagle3", target.model, target.tokenizer)
layers = tuple(head.target_hidden_layers)
start = time.perf_counter()
engine = Engine(target.model, compile=True)
print(mode, "built", round(time.perf_counter() - start), "s; hidden layers", layers, flush=True)
primed_token(engine, 300, 16)
generator = torch.Generator().manual_seed(1)
vocab = target.model.get_input_embeddings().weight.shape[0]
shapes = {"1 token + hidden": (1, layers), "5 tokens + hidden": (5, layers), "1 token": (1, ())}
rounds: dict[str, list[float]] = {}
with torch.inference_mode():
    for warm in (True, False, False, False):
        for name, (n, hidden) in shapes.items():
            block = torch.randint(3, vocab, (1, n), generator=generator)
            times = []
            for _ in range(3 if warm else 30):
                begin = time.perf_counter()
                engine.extend(block, hidden_layers=hidden)
                times.append(time.perf_counter() - begin)
                engine.rollback(n)
            if not warm:
                rounds.setdefault(name, []).append(statistics.median(times))
print(mode, "graph breaks:", sum(counters["graph_break"].values()), flush=True)
print(mode, "; ".join(f"{k}: {statistics.median(v) * 1000:.2f} ms" for k, v in rounds.items()), flush=True)
