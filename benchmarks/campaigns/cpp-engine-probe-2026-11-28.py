"""Our engine's step compiled with inductor's C++ GEMM template (unpacked weights, freezing, max-autotune,
CPP backend: cpp-gemm-probe-2026-11-28.py found it batch-invariant and as fast as MKL at one row) against
the eager packed engine, one process, taking turns step by step.

Run as is in the thirty-eighth session (from /tmp, then committed here unchanged but for this docstring and
formatting); its output is results/cpp_engine_probe_2026-11-28.log. Prints the compile time, whether a
6-token block's logits equal six one-token steps' bitwise (neither engine's do: attention sums a block's
longer key range in another order, docs/correctness.md), the two engines' logits' largest difference, and
T(1) / T(6) medians (20 steps a round, 3 rounds, 256-token context).

    python benchmarks/campaigns/cpp-engine-probe-2026-11-28.py \
        > benchmarks/results/cpp_engine_probe_2026-11-28.log
"""

import statistics
import time

import torch
import torch._inductor.config as inductor

from specdec.benchmarks.step_timing import primed_token, timed_steps
from specdec.engine import Engine
from specdec.models import load_model

inductor.freezing, inductor.max_autotune, inductor.max_autotune_gemm_backends = True, True, "CPP"
target = load_model("smollm2-135m")
packed = Engine(target.model, pack_weights=True)
cpp = Engine(target.model, pack_weights=False, warm_up=False)
t0 = time.time()
cpp.compile_steps(one_token=True)
print("compile s", round(time.time() - t0), flush=True)
# invariance: a 6-token block's logits against six one-token steps, both compiled
ids = torch.randint(3, 49000, (1, 200), generator=torch.Generator().manual_seed(0))
with torch.inference_mode():
    for name, e in (("cpp", cpp), ("packed", packed)):
        e.reset(1, 256)
        e.extend(ids[:, :190])
        block = e.extend(ids[:, 190:196]).logits
        e.rollback(6)
        steps = torch.cat([e.extend(ids[:, 190 + i : 191 + i]).logits for i in range(6)], 1)
        print(
            name,
            "block == steps bitwise:",
            torch.equal(block, steps),
            "max diff",
            (block - steps).abs().max().item(),
            flush=True,
        )
    print(
        "cpp vs packed logits max diff",
        (cpp.extend(ids[:, 196:197]).logits - packed.extend(ids[:, 196:197]).logits).abs().max().item(),
    )
tok = {n: primed_token(e, 256, 8) for n, e in (("cpp", cpp), ("packed", packed))}
for r in range(3):
    for w in (1, 6):
        times = {"cpp": [], "packed": []}
        for _ in range(20):
            for n, e in (("cpp", cpp), ("packed", packed)):
                times[n] += timed_steps(e, tok[n].expand(1, w), 1)
        print(
            "round",
            r,
            f"T({w})",
            {n: round(1000 * statistics.median(v), 1) for n, v in times.items()},
            flush=True,
        )
