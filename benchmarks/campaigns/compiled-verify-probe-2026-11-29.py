"""A compiled CPU engine's verify block through transformers' SDPA attention (``repeat_kv``'s copies) against
the engine's grouped attention (each key/value head read in place), SmolLM2 in the CPU compile mode, the two
engines taking turns call by call: T(1), a 5-token chain, a 5-node tree returning the EAGLE-3 head's hidden
layers, and a one-token step returning them; then a profile of the tree block and of a one-token step.

Run as is in the fortieth session at 2675d47 (before the compile mode took the grouped copy; on later
commits both engines compile it) from /work/runs, committed here with this docstring; its output is
results/compiled_verify_probe_2026-11-29.log (compiles: 843 and 758 s).

    python benchmarks/campaigns/compiled-verify-probe-2026-11-29.py \
        > benchmarks/results/compiled_verify_probe_2026-11-29.log
"""

import copy
import statistics
import sys
import time

import torch

from specdec.benchmarks.step_timing import primed_token
from specdec.drafters.factory import eagle3_drafter
from specdec.engine import Engine
from specdec.engine.attention import use_grouped_attention
from specdec.models import load_model

torch.manual_seed(0)
target = load_model("smollm2-135m")
drafter = eagle3_drafter("int8:tree-2:eagle3:smollm2-135m-eagle3", target.model)
hidden = tuple(drafter.target_hidden_layers)
print("hidden layers", hidden, flush=True)
variants = sys.argv[1].split(",") if len(sys.argv) > 1 else ["sdpa", "grouped"]
engines = {}
for name in variants:
    e = Engine(target.model, pack_weights=False, warm_up=False)
    if name == "grouped":
        shared = {id(p): p for p in target.model.parameters()} | {id(b): b for b in target.model.buffers()}
        e.user_model = use_grouped_attention(copy.deepcopy(target.model, memo=shared))
    t0 = time.time()
    e.compile_steps(one_token=True)
    e.warm_up_serving(hidden_layers=hidden, widths=(1, 2), batched=False)
    print(name, "compile s", round(time.time() - t0), flush=True)
    engines[name] = e
tree = torch.tensor(
    [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 0, 1, 1]], dtype=torch.bool
)
tok = {n: primed_token(e, 300, 16) for n, e in engines.items()}
cases = {
    "T1": dict(w=1),
    "T5chain": dict(w=5),
    "T5tree+hid": dict(w=5, tree=tree, hid=hidden),
    "T1hid": dict(w=1, hid=hidden),
}
with torch.inference_mode():
    for n, e in engines.items():  # warm every case once
        for c in cases.values():
            e.extend(tok[n].expand(1, c["w"]), tree_mask=c.get("tree"), hidden_layers=c.get("hid", ()))
            e.rollback(c["w"])
    for r in range(3):
        for cname, c in cases.items():
            times = {n: [] for n in engines}
            for _ in range(20):
                for n, e in engines.items():
                    t = time.perf_counter()
                    e.extend(
                        tok[n].expand(1, c["w"]), tree_mask=c.get("tree"), hidden_layers=c.get("hid", ())
                    )
                    times[n].append(time.perf_counter() - t)
                    e.rollback(c["w"])
            print(
                "round",
                r,
                cname,
                {n: round(1000 * statistics.median(v), 1) for n, v in times.items()},
                flush=True,
            )
    e = engines[variants[0]]
    from torch.profiler import ProfilerActivity, profile

    c = cases["T5tree+hid"]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(10):
            e.extend(tok[variants[0]].expand(1, 5), tree_mask=tree, hidden_layers=hidden)
            e.rollback(5)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(10):
            e.extend(tok[variants[0]].expand(1, 1))
            e.rollback(1)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
