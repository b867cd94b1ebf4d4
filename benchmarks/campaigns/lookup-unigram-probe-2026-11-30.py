"""Whether lookup+bita should also look up after a single matching token (prompt lookup alone does: min_ngram
1; lookup+bita asks for 2). Session 2026-11-30 (fifty-third), issue 20, CAMPAIGN next run 9. Greedy
lookup-4+bita[2] on Spec-Bench prompts; at every step the adapter drafted (no 2-gram match), this records
the 1-gram lookup chain (up to 4 tokens) there was, if any, and afterwards how many of its tokens the
target's output (identical to plain decoding: greedy) would have kept, against what the adapter's step kept.

    python benchmarks/campaigns/lookup-unigram-probe-2026-11-30.py [PER_TASK]
"""

import sys

import torch

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.drafters.bita import BiTADrafter, bita_folder
from specdec.drafters.combined import LookupThenBiTADrafter
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter
from specdec.pipeline import Pipeline


class UnigramSpy(LookupThenBiTADrafter):
    """lookup+bita recording, at each of the adapter's steps: output position, 1-gram chain, adapter kept."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.start, self.pending, self.steps = len(prompts[0]), None, []

    def propose(self, gamma, sampling, draws, *, min_confidence=0.0):
        before = self.model_steps
        chain = self.history[0].continuation(3, 1, 4)
        draft = super().propose(gamma, sampling, draws, min_confidence=min_confidence)
        fresh = self.model_steps > before
        self.pending = (len(self.history[0]) - self.start, list(chain)) if fresh else None
        return draft

    def update(self, feedback):
        if self.pending is not None:
            self.steps.append((*self.pending, int(feedback.num_accepted[0])))
        super().update(feedback)


def common(chain: list[int], text: list[int]) -> int:
    n = 0
    while n < len(chain) and n < len(text) and chain[n] == text[n]:
        n += 1
    return n


def main(per_task: int) -> None:
    loaded = load_model("smollm2-135m")
    adapter = BiTAAdapter.from_pretrained(bita_folder("smollm2-135m-bita"))
    drafter = UnigramSpy(BiTADrafter(adapter, "2"))
    pipe = Pipeline(loaded.model, loaded.tokenizer, drafter=drafter)
    rows = []  # (task, adapter kept, 1-gram chain length, 1-gram kept)
    for row in load_spec_bench(spec_bench_path(), per_task):
        out = pipe.generate(pipe.encode(row["prompt"], chat=True), max_new_tokens=128).token_ids[0]
        for pos, chain, kept in drafter.steps:
            rows.append((row["task"], kept, len(chain), common(chain, out[pos:]) if chain else 0))
    with_chain = [r for r in rows if r[2]]
    mean = lambda rs, i: sum(r[i] for r in rs) / max(1, len(rs))  # noqa: E731
    print(f"{len(rows)} adapter steps; with a 1-gram chain {len(with_chain)}")
    none = sum(r[3] == 0 for r in with_chain) / max(1, len(with_chain))
    adapter, unigram = mean(with_chain, 1), mean(with_chain, 3)
    print(f"  on those: adapter kept {adapter:.2f}, the 1-gram chain would keep {unigram:.2f}")
    print(f"  (chain {mean(with_chain, 2):.2f} long), kept none {none:.2f}")
    for task in sorted({r[0] for r in rows}):
        rs = [r for r in with_chain if r[0] == task]
        print(f"  {task:15s} {len(rs):4d} steps: adapter {mean(rs, 1):.2f}, 1-gram chain {mean(rs, 3):.2f}")
    print("torch", torch.__version__)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
