"""How well the BiTA adapter's own first-mask candidates predict whether a lookup+bita lookup step keeps its
first lookup token. Session 2026-11-30 (fifty-third), issue 20, CAMPAIGN next run 9: 43 % of lookup+bita's
lookup steps keep no lookup token, and a failed lookup step costs a 10-position block where the adapter's
tree costs 6. At every lookup step (greedy, Spec-Bench prompts, lookup-4+bita[2]) this records the rank of
lookup's first token and of the target's own next token among the adapter's mask-1 logits from the previous
pass, and how many lookup tokens the target kept and whether the match was a 3-gram; then, for gates "lookup
only where its first token is in the adapter's top k", the tokens and block positions the gated steps would
have given (an estimate: the steps after are taken as unchanged).

    python benchmarks/campaigns/lookup-gate-probe-2026-11-30.py [PER_TASK]
"""

import sys

import torch

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.drafters.bita import BiTADrafter, bita_folder
from specdec.drafters.combined import LookupThenBiTADrafter
from specdec.models import load_model
from specdec.models.bita import BiTAAdapter
from specdec.pipeline import Pipeline


class GateSpy(LookupThenBiTADrafter):
    """lookup+bita recording, at each lookup step: the ranks of lookup's first token and of the target's token
    among the adapter's mask-1 logits of the previous pass, lookup tokens kept, chain length, 3-gram match."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.pending = None

    def propose(self, gamma, sampling, draws, *, min_confidence=0.0):
        before = self.lookup_steps
        logits = self.bita.mask_logits
        trigram = all(h.continuation(3, 3, 1) for h in self.history)
        draft = super().propose(gamma, sampling, draws, min_confidence=min_confidence)
        self.pending = None
        if self.lookup_steps > before and logits is not None:
            self.pending = (logits[0, 0].float(), int(draft.tokens[0, 0]), draft.tokens.shape[1], trigram)
        return draft

    def update(self, feedback):
        if self.pending is not None:
            logits, first, length, trigram = self.pending
            kept = int(feedback.num_accepted[0])
            target = first if kept else int(feedback.next_token[0])
            rank = lambda t: int((logits > logits[t]).sum())  # noqa: E731
            RECORDS.append((rank(first), rank(target), kept, length, trigram))
        super().update(feedback)


RECORDS: list[tuple[int, int, int, int, bool]] = []


def main(per_task: int) -> None:
    loaded = load_model("smollm2-135m")
    adapter = BiTAAdapter.from_pretrained(bita_folder("smollm2-135m-bita"))
    drafter = GateSpy(BiTADrafter(adapter, "2"))
    pipe = Pipeline(loaded.model, loaded.tokenizer, drafter=drafter)
    for row in load_spec_bench(spec_bench_path(), per_task):
        out = pipe.generate(pipe.encode(row["prompt"], chat=True), max_new_tokens=128)
        print(row["task"], len(out.token_ids[0]), "lookup steps so far", len(RECORDS), flush=True)
    n = len(RECORDS)
    print(f"\n{n} lookup steps with mask logits; kept none: {sum(r[2] == 0 for r in RECORDS) / n:.2f}")
    print("gate k | lookup steps kept | their mean kept | moved steps | moved: mean kept", end="")
    print(" | moved: target in top 2")
    for k in (1, 2, 4, 8, 16, 64, 10**9):
        kept = [r for r in RECORDS if r[0] < k]
        moved = [r for r in RECORDS if r[0] >= k]
        mean = lambda rs, i: sum(r[i] for r in rs) / max(1, len(rs))  # noqa: E731
        top2 = sum(r[1] < 2 for r in moved) / max(1, len(moved))
        print(
            f"{k:>6} | {len(kept):>5} | {mean(kept, 2):.2f} | {len(moved):>5} | {mean(moved, 2):.2f}", end=""
        )
        print(f" | {top2:.2f}")
    for trigram in (True, False):
        rs = [r for r in RECORDS if r[4] == trigram]
        print(
            f"{'3-gram' if trigram else '2-gram only'} match: {len(rs)} steps, mean kept {mean(rs, 2):.2f},"
            f" kept none {sum(r[2] == 0 for r in rs) / max(1, len(rs)):.2f}, mean chain {mean(rs, 3):.2f},"
            f" target in the adapter's top 2 {sum(r[1] < 2 for r in rs) / max(1, len(rs)):.2f}"
        )
    print("torch", torch.__version__)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
