import sys, warnings, importlib, torch
sys.path.insert(0, "benchmarks/campaigns")
warnings.filterwarnings("ignore")
from specdec.drafters.factory import make_drafter
from specdec.engine import Engine
from specdec.models import load_model
probe = importlib.import_module("head-opaque-compile-probe-2026-11-29")

class Lean(torch.nn.Module):
    def __init__(self, q):
        super().__init__()
        self.q, self.packed = q, q._packed_params._packed_params
    def forward(self, x):
        return torch.ops.quantized.linear_dynamic(x, self.packed, True).to(x.dtype)

def wrap(m):
    for name, c in list(m.named_children()):
        if isinstance(c, torch.ao.nn.quantized.dynamic.Linear): setattr(m, name, Lean(c))
        else: wrap(c)
torch.set_num_threads(2)
target = load_model("smollm2-135m")
spec = "int8:tree-2:eagle3:smollm2-135m-eagle3"
a = make_drafter(spec, target.model, target.tokenizer); b = make_drafter(spec, target.model, target.tokenizer)
engine = Engine(target.model, warm_up=False)
ids = torch.randint(3, 40000, (400,), generator=torch.Generator().manual_seed(0)).tolist()
engine.reset(1, 600)
with torch.inference_mode():
    prefill = engine.prefill([ids], hidden_layers=a.target_hidden_layers)
for d in (a, b): d.attach(engine); d.begin([ids], prefill)
wrap(b.head)
x, y = probe.call(a), probe.call(b)
print("bitwise", torch.equal(x.logits, y.logits), torch.equal(x.prenorm, y.prenorm))
for _ in range(3):
    print("module", probe.timeit(lambda: probe.call(a)), "lean", probe.timeit(lambda: probe.call(b)), flush=True)
import statistics, time
ra, rb = [], []
for _ in range(20):
    for d, r in ((a, ra), (b, rb)):
        s = time.perf_counter()
        for _ in range(30): probe.call(d)
        r.append((time.perf_counter() - s) / 30 * 1e3)
print("interleaved min/median module", round(min(ra),3), round(statistics.median(ra),3), "lean", round(min(rb),3), round(statistics.median(rb),3))
print("paired median diff ms", round(statistics.median([x - y for x, y in zip(ra, rb)]), 3))
