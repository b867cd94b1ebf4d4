import pytest

from specdec.drafters import (
    EarlyExitDrafter,
    ModelDrafter,
    PromptLookupDrafter,
    ReducedPrecisionDrafter,
    TruncatedDrafter,
)
from tiny import make_gpt2, make_llama, make_tokenizer

PROMPTS = ["the quick brown fox jumps over the lazy dog. the quick", "def add(a, b):"]


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def target(request, tok):
    make = make_llama if request.param == "llama" else make_gpt2
    return make(len(tok), seed=0, layers=4)


DRAFTERS = {
    "independent": lambda target, tok: ModelDrafter(make_llama(len(tok), seed=7), tok),
    "self": lambda target, tok: ModelDrafter(target, tok),
    "int8": lambda target, tok: ReducedPrecisionDrafter(target, tok, "int8"),
    "bf16": lambda target, tok: ReducedPrecisionDrafter(target, tok, "bf16"),
    "prompt-lookup": lambda target, tok: PromptLookupDrafter(),
    "truncated": lambda target, tok: TruncatedDrafter(target, tok, 2),
    "early-exit": lambda target, tok: EarlyExitDrafter(target, 2),
}
