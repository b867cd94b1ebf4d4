"""The served workload of the thirty-sixth session's ragged-plan scripts (ragged-plan-log-2026-11-28b.py,
ragged-serve-ab-2026-11-28c.py, ragged-served-identity-2026-11-28.py): SmolLM2 plain decoding, greedy, 128
new tokens, the first turns of 5 Spec-Bench questions a task in the chat template, 2 × c requests all waiting
at the start (the prompts repeated in order)."""

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.decoders import StopCriteria
from specdec.models import load_model
from specdec.pipeline import Pipeline, eos_token_ids


def served_workload() -> tuple[Pipeline, StopCriteria, list[list[int]]]:
    """The pipeline, the stop criteria and the distinct encoded prompts."""
    loaded = load_model("smollm2-135m")
    pipe = Pipeline(loaded.model, loaded.tokenizer)
    stop = StopCriteria(128, eos_token_ids(loaded.model, loaded.tokenizer))
    questions = load_spec_bench(spec_bench_path(), per_task=5)
    return pipe, stop, [pipe.encode(q["prompt"], chat=True) for q in questions]


def requests(encoded: list[list[int]], concurrency: int) -> list[list[int]]:
    """The 2 × ``concurrency`` requests served, the prompts repeated in order."""
    return [encoded[i % len(encoded)] for i in range(2 * concurrency)]
