"""The decoders' conformance cases: prompts, every drafter by name, and a per-target cache of pipelines and
plain baselines (a module of its own, not the conftest, so that test folders run together import it by a name
no other folder's conftest shadows)."""

import torch

from specdec.drafters import (
    EarlyExitDrafter,
    ModelDrafter,
    PromptLookupDrafter,
    ReducedPrecisionDrafter,
    TruncatedDrafter,
)
from specdec.drafters.tandem import TandemDrafter
from specdec.pipeline import Pipeline
from tiny import make_eagle3, make_llama, make_tandem

PROMPTS = ["the quick brown fox jumps over the lazy dog. the quick", "def add(a, b):"]

DRAFTERS = {
    "independent": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=7), tok),
    "self": lambda target, tok: ModelDrafter(target, tok),
    # even token ids only: the target's choice is often a token the draft cannot propose (p = 0)
    "self-trimmed-vocab": lambda target, tok: ModelDrafter(target, tok, vocab=torch.arange(0, len(tok), 2)),
    "int8": lambda target, tok: ReducedPrecisionDrafter(target, tok, "int8"),
    "bf16": lambda target, tok: ReducedPrecisionDrafter(target, tok, "bf16"),
    "prompt-lookup": lambda target, tok: PromptLookupDrafter(),
    "prompt-only-lookup": lambda target, tok: PromptLookupDrafter(prompt_only=True),
    "truncated": lambda target, tok: TruncatedDrafter(target, tok, 2),
    "early-exit": lambda target, tok: EarlyExitDrafter(target, 2),
    "tandem": lambda target, tok: TandemDrafter(make_tandem(target), tok),
    "eagle3": lambda target, tok: make_eagle3(target, draft_ids=torch.arange(0, len(tok), 2)),
}


class Cached:
    """Pipelines per drafter and plain outputs per call, built on first use for one target."""

    def __init__(self, target, tok):
        self.target, self.tok = target, tok
        self.plain_pipe = Pipeline(target, tok)
        self._pipes, self._plain = {}, {}

    def pipe(self, drafter: str) -> Pipeline:
        if drafter not in self._pipes:
            self._pipes[drafter] = Pipeline(
                self.target, self.tok, drafter=DRAFTERS[drafter](self.target, self.tok)
            )
        return self._pipes[drafter]

    def plain(self, prompts, **kwargs):
        key = repr((prompts, sorted(kwargs.items())))
        if key not in self._plain:
            self._plain[key] = self.plain_pipe.generate(prompts, method="plain", **kwargs)
        return self._plain[key]
