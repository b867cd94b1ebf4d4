"""A CPU step compiles under the C++ GEMM settings, set around each call and restored after it; GCC gets
the options that keep a micro-kernel's accumulators in registers, other compilers nothing."""

import shutil
import stat

import pytest
import torch
import torch._inductor.config as inductor_config
from torch import nn

from specdec.engine import compiling

KEYS = [*compiling.CPU_STEP_OPTIONS, "cpp.march"]


def _recording_compile(seen):
    def fake_compile(model, **kwargs):
        def run(*args, **kw):
            seen.append({key: inductor_config.get_config_copy()[key] for key in KEYS})
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
    wanted = compiling.CPU_STEP_OPTIONS | compiling.gcc_options()
    assert seen == [{key: wanted.get(key, before[key]) for key in KEYS}] * 2
    after = inductor_config.get_config_copy()
    assert {k: after[k] for k in KEYS} == {k: before[k] for k in KEYS} != seen[0]


def test_a_gpu_step_is_the_plain_compiled_model(monkeypatch):
    seen = []
    monkeypatch.setattr(compiling.torch, "compile", _recording_compile(seen))
    step = compiling.compile_step(nn.Linear(4, 3), torch.device("cuda"))
    step(torch.randn(1, 4))
    assert seen[0]["freezing"] is False and seen[0]["max_autotune_gemm_backends"] != "CPP"


def _fake_compiler(tmp_path, name: str, banner: str) -> str:
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\necho '{banner}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_gcc_gets_the_register_options_behind_the_architecture_it_would_have_used(tmp_path):
    gcc = _fake_compiler(tmp_path, "g++", "g++ (Debian 12.2.0-14) 12.2.0")
    with inductor_config.patch({"cpp.cxx": (None, gcc), "cpp.march": None}):
        assert compiling.gcc_options() == {"cpp.march": f"native {compiling.GCC_REGISTER_OPTIONS}"}
    with inductor_config.patch({"cpp.cxx": (None, gcc), "cpp.march": "x86-64-v4"}):
        assert compiling.gcc_options()["cpp.march"].startswith("x86-64-v4 -f")


@pytest.mark.parametrize("banner", ["Debian clang version 14.0.6", "some other compiler 1.0"])
def test_other_compilers_and_a_switched_off_architecture_flag_get_nothing(tmp_path, banner):
    other = _fake_compiler(tmp_path, "c++", banner)
    with inductor_config.patch({"cpp.cxx": (None, other), "cpp.march": None}):
        assert compiling.gcc_options() == {}
    with inductor_config.patch({"cpp.cxx": (None, str(tmp_path / "missing")), "cpp.march": None}):
        assert compiling.gcc_options() == {}
    gcc = _fake_compiler(tmp_path, "g++", "g++ (GCC) 12.2.0")
    with inductor_config.patch({"cpp.cxx": (None, gcc), "cpp.march": ""}):
        assert compiling.gcc_options() == {}


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on this machine")
def test_inductor_builds_a_linear_with_the_options_and_its_output_keeps_its_bits():
    """The options reach a real inductor build (a kernel of five rows, the size they change) and change
    unrolling only: the compiled product equals the one built without them, bit for bit."""
    torch.manual_seed(0)
    layers = [nn.Linear(64, 96, bias=False).eval() for _ in range(2)]
    layers[1].load_state_dict(layers[0].state_dict())
    x = torch.randn(5, 64)
    outputs = []
    with torch.inference_mode():
        for layer, extra in zip(layers, ({}, compiling.gcc_options()), strict=True):
            with inductor_config.patch(compiling.CPU_STEP_OPTIONS | extra):
                outputs.append(torch.compile(layer, dynamic=True)(x))
    assert compiling.gcc_options()
    assert torch.equal(outputs[0], outputs[1])
    torch.testing.assert_close(outputs[1], layers[0](x))
