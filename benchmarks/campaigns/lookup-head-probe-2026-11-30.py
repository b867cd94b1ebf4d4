"""Whether the default drafter (`lookup+int8:tree-2:eagle3:smollm2-135m-eagle3`) should leave some of its
lookup steps to the EAGLE-3 head: at every lookup step (greedy, Spec-Bench prompts), the head also drafts
its tree (γ 3, top 2 at each depth, as its own steps do) from the same context and is rolled back unheard;
afterwards both are scored against the output (greedy: identical to plain decoding, checked), split by
whether the match was a 3-gram. Session 2026-11-30 (fifty-third), issue 20, after lookup-gate-
probe-2026-11-30.py found lookup+bita's choice sound.

    python benchmarks/campaigns/lookup-head-probe-2026-11-30.py [PER_TASK]
"""

import sys

import torch

from specdec.benchmarks.data import load_spec_bench, spec_bench_path
from specdec.drafters.combined import LookupThenModelDrafter
from specdec.drafters.factory import make_drafter
from specdec.models import load_model
from specdec.pipeline import Pipeline

HEAD_GAMMA = 3
SPEC = "lookup+int8:tree-2:eagle3:smollm2-135m-eagle3"


class HeadSpy(LookupThenModelDrafter):
    """The default drafter, recording at each lookup step: position, lookup chain, the head's tree, 3-gram."""

    def begin(self, prompts, prefill):
        super().begin(prompts, prefill)
        self.start, self.steps = len(prompts[0]), []

    def propose(self, gamma, sampling, draws, *, min_confidence=0.0):
        if self.next_source() == "lookup" and gamma > 0:
            head = self.model.propose(HEAD_GAMMA, sampling, draws)
            self.model.cache.rollback(self.model._fed)  # the head's drafted pairs leave, unheard
            trigram = all(h.continuation(3, 3, 1) for h in self.history)
            self.pending = (len(self.history[0]) - self.start, head, trigram)
        else:
            self.pending = None
        draft = super().propose(gamma, sampling, draws, min_confidence=min_confidence)
        if self.pending is not None:
            pos, head, trigram = self.pending
            self.steps.append((pos, draft.tokens[0, : int(draft.row_lengths()[0])].tolist(), head, trigram))
        return draft


def chain_kept(chain: list[int], text: list[int]) -> int:
    n = 0
    while n < len(chain) and n < len(text) and chain[n] == text[n]:
        n += 1
    return n


def tree_kept(head, text: list[int]) -> int:
    """The deepest node of the head's tree (row 0) whose path matches ``text``."""
    tokens, parents = head.tokens[0].tolist(), head.parents
    depth = {-1: 0}
    matched = {-1}
    best = 0
    for i, (token, parent) in enumerate(zip(tokens, parents, strict=True)):
        depth[i] = depth[parent] + 1
        if parent in matched and depth[i] <= len(text) and token == text[depth[i] - 1]:
            matched.add(i)
            best = max(best, depth[i])
    return best


def main(per_task: int) -> None:
    loaded = load_model("smollm2-135m")
    drafter = make_drafter(SPEC, loaded.model, loaded.tokenizer)
    drafter.__class__ = HeadSpy
    pipe = Pipeline(loaded.model, loaded.tokenizer, drafter=drafter)
    rows = []  # (task, 3-gram, lookup chain length, lookup kept, head kept, head nodes)
    for row in load_spec_bench(spec_bench_path(), per_task):
        ids = pipe.encode(row["prompt"], chat=True)
        out = pipe.generate(ids, max_new_tokens=128).token_ids[0]
        assert out == pipe.generate(ids, method="plain", max_new_tokens=128).token_ids[0]
        for pos, chain, head, trigram in drafter.steps:
            text = out[pos:]
            rows.append(
                (
                    row["task"],
                    trigram,
                    len(chain),
                    chain_kept(chain, text),
                    tree_kept(head, text),
                    head.tokens.shape[1],
                )
            )
    mean = lambda rs, i: sum(r[i] for r in rs) / max(1, len(rs))  # noqa: E731
    print(f"{len(rows)} lookup steps (outputs identical to plain decoding)")
    for trigram in (True, False):
        rs = [r for r in rows if r[1] == trigram]
        print(
            f"{'3-gram' if trigram else '2-gram only'}: {len(rs)} steps; lookup chain {mean(rs, 2):.2f} long,"
            f" kept {mean(rs, 3):.2f}; the head's tree ({mean(rs, 5):.0f} nodes) would keep {mean(rs, 4):.2f}"
        )
        for task in sorted({r[0] for r in rs}):
            ts = [r for r in rs if r[0] == task]
            print(f"    {task:15s} {len(ts):4d}: lookup {mean(ts, 3):.2f}, head {mean(ts, 4):.2f}")
    print("torch", torch.__version__)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
