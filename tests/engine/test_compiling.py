"""A CPU step compiles under the C++ GEMM settings, set around each call and restored after it."""

import torch
import torch._inductor.config as inductor_config
from torch import nn

from specdec.engine import compiling


def _recording_compile(seen):
    def fake_compile(model, **kwargs):
        def run(*args, **kw):
            seen.append({key: inductor_config.get_config_copy()[key] for key in compiling.CPU_STEP_OPTIONS})
            return model(*args, **kw)

        return run

    return fake_compile


def test_a_cpu_step_runs_under_the_gemm_settings_and_leaves_them_as_they_were(monkeypatch):
    seen, before = [], inductor_config.get_config_copy()
    monkeypatch.setattr(compiling.torch, "compile", _recording_compile(seen))
    layer = nn.Linear(4, 3)
    step = compiling.compile_step(layer, torch.device("cpu"))
    x = torch.randn(2, 4)
    assert torch.equal(step(x), layer(x))
    step(x)
    assert seen == [compiling.CPU_STEP_OPTIONS] * 2
    after, keys = inductor_config.get_config_copy(), compiling.CPU_STEP_OPTIONS
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys} != compiling.CPU_STEP_OPTIONS


def test_a_gpu_step_is_the_plain_compiled_model(monkeypatch):
    seen = []
    monkeypatch.setattr(compiling.torch, "compile", _recording_compile(seen))
    step = compiling.compile_step(nn.Linear(4, 3), torch.device("cuda"))
    step(torch.randn(1, 4))
    assert seen[0]["freezing"] is False and seen[0]["max_autotune_gemm_backends"] != "CPP"
