"""Session 2026-11-28 (thirty-sixth), CAMPAIGN next run 5: served rows with ragged plans decode as they would
alone. ragged-plan-log-2026-11-28b.py's workload (2 × c Spec-Bench first turns, chat template, greedy, 128
new tokens, all waiting at the start) served at c with plain decoding, fp32, each request's tokens compared
with the same prompt served alone (c = 1, where no plan applies); prints how many are identical, how many
forwards were planned, and the first differing position of any that differ. Machine to itself:
    python benchmarks/campaigns/ragged-served-identity-2026-11-28.py --concurrency 16
"""

import argparse

from served_workload import requests, served_workload

from specdec.benchmarks.serving import serve
from specdec.decoders import PlainDecoding
from specdec.engine import attention

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--concurrency", type=int, default=16)
args = parser.parse_args()
pipe, stop, encoded = served_workload()
prompts = requests(encoded, args.concurrency)
planned, real_plan = [0, 0], attention.plan_for


def counted(mask):
    plan = real_plan(mask)
    planned[0] += plan is not None
    planned[1] += mask.shape[0] > 1
    return plan


attention.plan_for = counted
together, _ = serve(PlainDecoding(), pipe.engine, None, prompts, args.concurrency, stop)
alone = {}
for i, prompt in enumerate(encoded):
    (line,), _ = serve(PlainDecoding(), pipe.engine, None, [prompt], 1, stop)
    alone[i] = line.tokens
differ = {
    i: next(
        (p for p, (a, b) in enumerate(zip(line.tokens, alone[i % len(encoded)], strict=False)) if a != b),
        "length",
    )
    for i, line in enumerate(together)
    if line.tokens != alone[i % len(encoded)]
}
print({"concurrency": args.concurrency, "requests": len(prompts), "identical": len(prompts) - len(differ)})
print({"planned forwards": planned[0], "forwards of several rows": planned[1], "first difference": differ})
