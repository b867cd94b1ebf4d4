"""Session 2026-11-27 (thirty-second), issue 20: tokens per target call of the EAGLE-3 head's top-k tree
(tree-K) and dynamic tree (dtree-K, beam B) at fixed gamma, on PER_TASK Spec-Bench prompts per task x 128
tokens, greedy, every output compared with the first configuration's (all identical). Tokens per call do not
depend on timing; the seconds printed do (in the committed log, γ2 tree-3 and dtree-2 ran beside the test
suite).
    python benchmarks/campaigns/dtree-fixed-gamma-probe-2026-11-27i.py PER_TASK GAMMAS WIDTH/BEAM,...
    (the committed log: 2 2,3,4 2/4,3/4,4/4; results/dtree_fixed_gamma_probe_2026-11-27i.log)
"""

import sys
import time

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.decoders import SpeculativeSampling
from specdec.drafters import make_drafter
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.models import load_model
from specdec.pipeline import Pipeline

per_task, gammas, dynamic = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3].split(",")
target = load_model("smollm2-135m")
prompts = [[{"role": "user", "content": q["prompt"]}] for q in load_spec_bench(spec_bench_path(), per_task)]
base = make_drafter("int8:tree-2:eagle3:smollm2-135m-eagle3", target.model, target.tokenizer)
configs = {"tree-2": {"tree_width": 2}, "tree-3": {"tree_width": 3}}
for shape in dynamic:
    width, beam = shape.split("/")
    configs[f"dtree-{width}/beam{beam}"] = {"tree_width": int(width), "dynamic": True, "beam": int(beam)}
reference = None
for gamma in map(int, gammas):
    for name, options in configs.items():
        pipe = Pipeline(
            target.model, target.tokenizer, drafter=Eagle3Drafter(base.head, base.embeddings, **options)
        )
        calls = new = 0
        outputs, start = [], time.perf_counter()
        for prompt in prompts:
            result = pipe.generate(prompt, method=SpeculativeSampling(gamma), max_new_tokens=128)
            calls, new = calls + result.stats.target_calls, new + result.stats.new_tokens
            outputs.append(result.token_ids)
        reference = reference or outputs
        elapsed = time.perf_counter() - start
        print(
            f"γ{gamma} {name:16s} tokens/call {new / calls:.3f} same {outputs == reference} {elapsed:.0f}s",
            flush=True,
        )
