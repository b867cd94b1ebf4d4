from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny import make_gpt2, make_llama, make_tokenizer


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def tiny_llama(tiny_tokenizer):
    return make_llama(len(tiny_tokenizer), seed=0)


@pytest.fixture(scope="session")
def tiny_gpt2(tiny_tokenizer):
    return make_gpt2(len(tiny_tokenizer), seed=0)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_llama, tiny_tokenizer) -> Path:
    """A saved HF model folder (model + tokenizer), as a user would bring."""
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_llama.save_pretrained(path)
    tiny_tokenizer.save_pretrained(path)
    return path
