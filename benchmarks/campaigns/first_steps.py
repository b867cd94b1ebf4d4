"""Accepted tokens per step of the first steps against the rest, at a fixed γ 1, for drafter specs given as
arguments, on the first turns of 5 Spec-Bench prompts per task (summaries, RAG, math): does a drafter start
its answers badly? (gamma_trace.py found the adaptive policy's first drafting steps rejected on nearly every
prompt.)

    python benchmarks/campaigns/first_steps.py int8:tree-2:eagle3:smollm2-135m-eagle3
"""

import sys

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.decoders import SpeculativeSampling
from specdec.decoders.gamma import FixedGamma, StepResult
from specdec.drafters import make_drafter
from specdec.models import load_model
from specdec.pipeline import Pipeline

TASKS = ("summarization", "rag", "math_reasoning")
FIRST = 10


class Logged(FixedGamma):
    """A fixed γ that writes down what each step kept."""

    def __init__(self, gamma: int):
        super().__init__(gamma)
        self.kept: list[int] = []

    def update(self, step: StepResult) -> None:
        self.kept.append(step.accepted[0])


def main(specs: list[str]) -> None:
    target = load_model("smollm2-135m")
    for spec in specs:
        drafter = make_drafter(spec, target.model, target.tokenizer)
        pipe = Pipeline(target.model, target.tokenizer).with_drafter(drafter)
        for prompt in load_spec_bench(spec_bench_path(), 5):
            if prompt["task"] not in TASKS:
                continue
            messages = [{"role": "user", "content": prompt["prompt"]}]
            ids = target.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
            ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
            policy = Logged(1)
            pipe.generate(ids, method=SpeculativeSampling(policy), max_new_tokens=128)
            kept = policy.kept
            first, rest = sum(kept[:FIRST]) / FIRST, sum(kept[FIRST:]) / max(len(kept) - FIRST, 1)
            print(
                f"{spec} {prompt['task']} q{prompt['question_id']} prompt {len(ids)} tokens: "
                f"first {FIRST} steps kept {kept[:FIRST]} (mean {first:.2f}), later mean {rest:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
