"""Probe: the EAGLE-3 head compiled whole with its fbgemm int8 linears as one opaque custom op each, against
the eager int8 head (``int8:``, what the default drafter runs).

Why: a head call on the Cascade Lake Xeon is ~1.5 ms of fbgemm int8 linears and ~100 small ops (norms,
rotary, concatenations, attention) at 20-40 µs each. Compiled as it is, dynamo breaks the graph at every
fbgemm linear (their packed weights are ScriptObjects), so inductor fuses nothing; lowered to oneDNN's int8
GEMM instead, one-row products cost 2-3x fbgemm's (``head-compile-probe-2026-11-29.py``). Named by an int
handle inside a custom op, as the engine's packed fp32 linears are (``specdec.engine.kernels``), each fbgemm
linear is one node the graph calls, and the small ops around it fuse.

Measured: one-pair draft calls over a 400-pair cache (rolled back after each; no mask, as every chain step of
one request), a masked 3-pair catch-up block, 50 pairs later (no recompiles wanted), and the logits against
the eager head's. (min, median) ms a call over 7 rounds of 30, nothing else running:

    python benchmarks/campaigns/head-opaque-compile-probe-2026-11-29.py \
        > benchmarks/results/head_opaque_compile_probe_2026-11-29.log

Seen in the forty-third session (before ``Int8Linear``): no gain. The compiled head is bitwise the eager one
at one pair, 3.2-3.8 ms a call against eager's 3.0-3.6; a profile of the eager call puts half of it in the
eight fbgemm calls (179 µs each) and the rest in ~100 small ops, which the compiled graph does not make
cheaper.
"""

import statistics
import time
import warnings
import weakref

import torch
import torch._dynamo

from specdec.drafters.factory import make_drafter
from specdec.engine import Engine
from specdec.models import load_model

warnings.filterwarnings("ignore")
_LINEARS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


@torch.library.custom_op("probe::int8_linear", mutates_args=())
def int8_linear(x: torch.Tensor, handle: int) -> torch.Tensor:
    return _LINEARS[handle].linear(x)


@int8_linear.register_fake
def _(x: torch.Tensor, handle: int) -> torch.Tensor:
    return x.new_empty(*x.shape[:-1], _LINEARS[handle].out_features)


class Opaque(torch.nn.Module):
    def __init__(self, linear, handle):
        super().__init__()
        self.linear, self.handle, self.out_features = linear, handle, linear.out_features
        _LINEARS[handle] = self

    def forward(self, x):
        if torch.compiler.is_compiling():
            return int8_linear(x, self.handle)
        return self.linear(x)


def wrap(module, handles):
    for name, child in list(module.named_children()):
        if isinstance(child, torch.ao.nn.quantized.dynamic.Linear):
            setattr(module, name, Opaque(child, next(handles)))
        else:
            wrap(child, handles)


def call(drafter, width=1):
    counts = torch.full((1,), width, dtype=torch.long)
    tokens = torch.full((1, width), 5)
    features = drafter._tail_feature[:, None].expand(-1, width, -1)
    with torch.inference_mode():
        out = drafter._run(tokens, features, counts, drafter.cache)
        drafter.cache.rollback(counts)
    return out


def timeit(f, n=30, reps=7):
    for _ in range(5):
        f()
    rounds = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            f()
        rounds.append((time.perf_counter() - start) / n * 1e3)
    return round(min(rounds), 3), round(statistics.median(rounds), 3)


def compare(eager, compiled, width=1):
    for name, drafter in (("eager", eager), ("compiled", compiled)):
        print(f"  {name} width {width} ms", timeit(lambda d=drafter: call(d, width)), flush=True)


def main():
    torch.set_num_threads(2)
    target = load_model("smollm2-135m")
    spec = "int8:tree-2:eagle3:smollm2-135m-eagle3"
    eager = make_drafter(spec, target.model, target.tokenizer)
    compiled = make_drafter(spec, target.model, target.tokenizer)
    engine = Engine(target.model, warm_up=False)
    ids = torch.randint(3, 40000, (400,), generator=torch.Generator().manual_seed(0)).tolist()
    engine.reset(1, 600)
    with torch.inference_mode():
        prefill = engine.prefill([ids], hidden_layers=eager.target_hidden_layers)
    for drafter in (eager, compiled):
        drafter.attach(engine)
        drafter.begin([ids], prefill)
    wrap(compiled.head, iter(range(10**6)))
    compiled.head = torch.compile(compiled.head, dynamic=True)
    for width in (1, 3):
        start = time.time()
        a, b = call(eager, width), call(compiled, width)
        print(f"width {width}: first compiled call s", round(time.time() - start, 1))
        same = bool((a.logits.argmax(-1) == b.logits.argmax(-1)).all())
        diff = float((a.logits - b.logits).abs().max())
        print(f"  same argmax {same}, max logit diff {diff:.3g}, bitwise {torch.equal(a.logits, b.logits)}")
    for _ in range(2):
        compare(eager, compiled, 1)
    compare(eager, compiled, 3)
    for drafter in (eager, compiled):
        with torch.inference_mode():
            for _ in range(50):
                drafter._run(
                    torch.tensor([[5]]),
                    drafter._tail_feature[:, None],
                    torch.ones(1, dtype=torch.long),
                    drafter.cache,
                )
    start = time.time()
    call(compiled)
    print("50 pairs later, one compiled call s", round(time.time() - start, 3))
    compare(eager, compiled, 1)
    print("graphs compiled:", torch._dynamo.utils.counters["stats"]["unique_graphs"])


if __name__ == "__main__":
    main()
