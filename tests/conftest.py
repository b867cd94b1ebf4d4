from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

from specdec.engine import compiling
from tiny import make_gpt2, make_llama, make_tokenizer


def pytest_configure(config):
    """Under pytest-xdist each worker gets its share of the cores: two workers each running torch on
    every core would fight over them (the suite's small models gain more from running two tests at
    once than from two threads in one)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        torch.set_num_threads(max(1, torch.get_num_threads() // workers))


@pytest.fixture(autouse=True)
def _compiled_steps_build_only_what_they_test(request, monkeypatch):
    """Compiled CPU steps in tests call their kernels from inductor's generated Python, not from the
    shipped C++ wrapper (the same kernels, only the host code calling them differs: each graph skips the
    wrapper's C++ build, 114 against 60 s for the lossless test on 2 cores), and take inductor's default
    matrix products instead of autotuning its C++ GEMM template (which builds and times each candidate
    kernel: with an empty inductor cache the compiled engine test took 130 s with it and 71 s without on
    an AVX2-only EPYC). What the tests check (the engine's layout, masks, slots and rollback under a
    static-shape step) does not depend on which GEMM runs; tests marked ``shipped_compile`` compile with
    the settings users get, the template included, and check those steps against the eager engine."""
    if request.node.get_closest_marker("shipped_compile") is None:
        monkeypatch.setitem(compiling.CPU_STEP_OPTIONS, "cpp_wrapper", False)
        monkeypatch.setitem(compiling.CPU_STEP_OPTIONS, "max_autotune", False)


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
