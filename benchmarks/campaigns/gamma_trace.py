"""Step-by-step trace of the adaptive γ policy beside fixed γ, on chosen Spec-Bench tasks.

Why: TREE_GAMMA_2026-11-27e.md measured a fixed γ 2 beating the adaptive policy for the EAGLE-3 tree on
every task, most on RAG and summaries, where the policy ran mostly plain steps. This records, for each step
of each prompt, what the policy estimated (its rate for γ 0..4, the per-position acceptance, the call-cost
curve at the step's width and at one token, the draft cost) and what the step then did, and runs the same
prompts at fixed γ to measure what those estimates stand for: which one is pessimistic.

    python benchmarks/campaigns/gamma_trace.py --drafter int8:tree-2:eagle3:smollm2-135m-eagle3 \
        --task rag --task summarization --per-task 5 --fixed 1,2 --out benchmarks/results/gamma_trace_X.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.benchmarks.report import machine_info
from specdec.decoders import SpeculativeSampling
from specdec.decoders.gamma import AdaptiveGamma, StepResult
from specdec.drafters import make_drafter
from specdec.models import load_model
from specdec.pipeline import Pipeline

SHOWN = 5  # γ 0..4


class TracedGamma(AdaptiveGamma):
    """The adaptive policy, its estimates written down before each choice and each step's outcome after."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[dict] = []

    def next_gamma(self, batch_size: int = 1) -> int:
        rates = [self.rate(g, 1) for g in range(SHOWN)]
        gamma = super().next_gamma(batch_size)
        self.steps.append(
            {
                "chosen": gamma,
                "probing": self._probing,
                "rates": rates,
                "alpha_positions": [round(a, 3) for a in self.position_acceptance()[: SHOWN - 1]],
                "t1": self.call_time(1),
                "t_block": [self.call_time(g + 1) for g in range(1, SHOWN)],
                "draft_time": self.draft_time(1),
            }
        )
        return gamma

    def update(self, step: StepResult) -> None:
        if self.steps and "verify_time" not in self.steps[-1]:
            self.steps[-1] |= {
                "gamma": step.gamma,
                "accepted": step.accepted[0],
                "verify_time": step.verify_time,
            }
        super().update(step)


def encode(tokenizer, text: str) -> list[int]:
    ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def fixed_summary(pipe: Pipeline, ids: list[int], gamma: int, max_new_tokens: int) -> dict:
    out = pipe.generate(ids, method=SpeculativeSampling(gamma), max_new_tokens=max_new_tokens)
    stats = out.stats
    return {
        "tokens_per_call": stats.tokens_per_target_call,
        "seconds_per_call": stats.target_time / max(stats.target_calls, 1),
        "tokens_per_second": stats.tokens_per_second,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drafter", required=True)
    parser.add_argument("--task", action="append", required=True)
    parser.add_argument("--per-task", type=int, default=5)
    parser.add_argument("--fixed", default="1,2")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    target = load_model("smollm2-135m")
    drafter = make_drafter(args.drafter, target.model, target.tokenizer)
    plain = Pipeline(target.model, target.tokenizer)
    pipe = plain.with_drafter(drafter)
    prompts = [p for p in load_spec_bench(spec_bench_path(), args.per_task) if p["task"] in args.task]
    pipe.generate(
        encode(target.tokenizer, "Hello"), method=SpeculativeSampling(2), max_new_tokens=8
    )  # warm-up
    records = []
    for prompt in prompts:
        ids = encode(target.tokenizer, prompt["prompt"])
        policy = TracedGamma()
        out = pipe.generate(ids, method=SpeculativeSampling(policy), max_new_tokens=args.max_new_tokens)
        base = plain.generate(ids, max_new_tokens=args.max_new_tokens).stats
        fixed = {g: fixed_summary(pipe, ids, int(g), args.max_new_tokens) for g in args.fixed.split(",")}
        chosen = [s["chosen"] for s in policy.steps]
        records.append(
            {
                "question_id": prompt["question_id"],
                "task": prompt["task"],
                "prompt_tokens": len(ids),
                "adaptive": {
                    "tokens_per_second": out.stats.tokens_per_second,
                    "tokens_per_call": out.stats.tokens_per_target_call,
                    "plain_share": chosen.count(0) / max(len(chosen), 1),
                },
                "plain": {
                    "tokens_per_second": base.tokens_per_second,
                    "seconds_per_call": base.target_time / 128,
                },
                "fixed": fixed,
                "steps": policy.steps,
            }
        )
        row = records[-1]
        print(
            f"{prompt['task']:14s} q{prompt['question_id']:<4d} ctx {len(ids):5d} plain share "
            f"{row['adaptive']['plain_share']:.2f} adaptive {row['adaptive']['tokens_per_second']:.1f} "
            + " ".join(f"γ{g} {v['tokens_per_second']:.1f}" for g, v in fixed.items())
            + f" plain {base.tokens_per_second:.1f} tok/s; α (last) {policy.steps[-1]['alpha_positions']}",
            flush=True,
        )
    summary = {
        "median_plain_share": statistics.median(r["adaptive"]["plain_share"] for r in records),
        "command": " ".join(["gamma_trace.py", *(argv or [])]),
    }
    args.out.write_text(
        json.dumps({"machine": machine_info(), "summary": summary, "records": records}, indent=1)
    )


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
