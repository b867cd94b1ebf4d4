"""Coupled rule, sampled (T 0.8, top-p 0.95): is a sharper (TAU < 1) or flatter (TAU > 1) draft accepted more?

The draft's logits are divided by TAU before the request's own config (any draft guess is lossless under the
coupled rule). Eager engine, the default drafter, Spec-Bench PER_TASK prompts per task x NEW tokens, seed =
prompt index; alpha and tokens per target call per TAU. The adaptive gamma policy reads timings, so two runs
of one TAU differ (the log has two runs of TAU 1).
Run: PYTHONPATH=src python benchmarks/results/draft-sharpness-probe-2026-11-29.py 1,0.5,0.25 2 64 [check]
(Spec-Bench at /work/shared; "check" also compares every output with plain decoding's).
"""

import sys
from pathlib import Path

import specdec.drafters.small_model as sm
from specdec.benchmarks.data import load_spec_bench
from specdec.drafters.factory import make_drafter
from specdec.models import load_model
from specdec.pipeline import Pipeline

ORIGINAL = sm.sampling_distribution
SPEC_BENCH = Path("/work/shared/data/eval/spec_bench/question.jsonl")


def main() -> None:
    taus, per_task, new_tokens = (
        [float(x) for x in sys.argv[1].split(",")],
        int(sys.argv[2]),
        int(sys.argv[3]),
    )
    target = load_model("smollm2-135m")
    drafter = make_drafter("lookup+int8:tree-2:eagle3:smollm2-135m-eagle3", target.model, target.tokenizer)
    pipe = Pipeline(target.model, target.tokenizer, drafter=drafter)
    prompts = [r["prompt"] for r in load_spec_bench(SPEC_BENCH, per_task)]
    kw = dict(chat=True, temperature=0.8, top_p=0.95, max_new_tokens=new_tokens)
    plain = None
    if "check" in sys.argv:
        plain = [pipe.generate(p, method="plain", seed=i, **kw).token_ids[0] for i, p in enumerate(prompts)]
    for tau in taus:
        sm.sampling_distribution = lambda logits, sampling, tau=tau: ORIGINAL(logits / tau, sampling)
        proposed = accepted = calls = new = same = 0
        for i, prompt in enumerate(prompts):
            result = pipe.generate(prompt, seed=i, **kw)
            stats = result.stats
            proposed, accepted = proposed + stats.proposed_tokens, accepted + stats.accepted_tokens
            calls, new = calls + stats.target_calls, new + stats.new_tokens
            same += int(plain is not None and result.token_ids[0] == plain[i])
        print(
            f"tau {tau}: alpha {accepted / proposed:.4f} ({accepted}/{proposed}), "
            f"tokens/call {new / calls:.3f}, same as plain {same}/{len(prompts) if plain else '-'}",
            flush=True,
        )


if __name__ == "__main__":
    main()
