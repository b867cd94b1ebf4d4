"""EAGLE-3 heads in the speculators layout: what specdec writes passes the checks vLLM runs on it, a broken
folder fails them, and a head written in that layout by someone else drafts here.

vLLM is not installed here, so :func:`assert_vllm_eagle3_ready` replays, as plain assertions, what vLLM
does with a speculators folder (vllm-project/vllm, files read in the stored index):

- vllm/transformers_utils/config.py: a config.json without ``model_type`` and with ``speculators_config``
  is read as a speculators config;
- vllm/transformers_utils/configs/speculators/base.py (``SpeculatorsConfig``): ``speculators_model_type``
  must be a supported type; ``validate_speculators_config`` reads ``speculators_config.proposal_methods[0]
  .speculative_tokens``, ``speculators_config.verifier.name_or_path`` and needs a dict
  ``transformer_layer_config``; ``build_vllm_speculative_config`` takes ``num_speculative_tokens`` from
  the first proposal method;
- .../speculators/algos.py ``update_eagle3``: copies ``draft_vocab_size``, ``target_hidden_size``,
  ``eagle_aux_hidden_state_layer_ids``, sets ``norm_before_residual`` (**True when absent**, where the
  speculators package reads false: specdec writes it explicitly) and the architecture
  ``Eagle3LlamaForCausalLM``;
- vllm/model_executor/models/llama_eagle3.py: ``fc`` maps 3 × target_hidden_size to hidden_size; layer
  0's q/k/v read 2 × hidden_size; ``lm_head`` has ``draft_vocab_size`` rows; ``load_weights`` prefixes
  bare names with ``model.`` (a name already prefixed would not load), renames ``d2t``, skips ``t2d``,
  and maps draft id i to target id i + d2t[i].
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from specdec.errors import InvalidArgumentError
from specdec.models.eagle3_layout import CONFIG_FILE, WEIGHTS_FILE, load_head, save_head
from tiny import make_eagle3_head, make_llama, make_tokenizer

VERIFIER = {"name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct", "architectures": ["LlamaForCausalLM"]}
SUPPORTED_SPECULATORS_TYPES = {"eagle", "eagle3"}
LOADABLE = {"fc.weight", "norm.weight", "lm_head.weight", "d2t", "t2d", "embed_tokens.weight"}
LAYER = {
    *(f"layers.0.self_attn.{p}_proj.weight" for p in "qkvo"),
    *(f"layers.0.mlp.{p}_proj.weight" for p in ("gate", "up", "down")),
    *(f"layers.0.{n}.weight" for n in ("input_layernorm", "post_attention_layernorm", "hidden_norm")),
}


def vllm_config(config: dict) -> dict:
    """What vLLM builds from a speculators config.json (validation, then update_eagle3), or AssertionError."""
    assert "model_type" not in config and config.get("speculators_config") is not None, (
        "not read as speculators"
    )
    assert config.get("speculators_model_type") in SUPPORTED_SPECULATORS_TYPES
    spec = config["speculators_config"]
    tokens = spec["proposal_methods"][0]["speculative_tokens"]
    assert isinstance(tokens, int) and tokens >= 1
    assert isinstance(spec["verifier"]["name_or_path"], str)
    assert isinstance(config.get("transformer_layer_config"), dict), "Must provide transformer_layer_config"
    built = dict(config["transformer_layer_config"])
    built["draft_vocab_size"] = config.get("draft_vocab_size")
    if config.get("target_hidden_size") is not None:
        built["target_hidden_size"] = config["target_hidden_size"]
    built["norm_before_residual"] = config.get("norm_before_residual", True)
    built["architectures"] = ["Eagle3LlamaForCausalLM"]
    if config.get("eagle_aux_hidden_state_layer_ids"):
        built["eagle_aux_hidden_state_layer_ids"] = config["eagle_aux_hidden_state_layer_ids"]
    return built | {"num_speculative_tokens": tokens}


def assert_vllm_eagle3_ready(
    folder: Path, target_layers: int, trained_with_norm_before_residual: bool
) -> None:
    """The config vLLM builds and every tensor's name and shape against it."""
    raw = json.loads((folder / CONFIG_FILE).read_text())
    config = vllm_config(raw)
    assert "norm_before_residual" in raw, "absent, vLLM assumes true and the speculators package false"
    assert config["norm_before_residual"] == trained_with_norm_before_residual
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    target_hidden = config.get("target_hidden_size", hidden)
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    draft_vocab = config["draft_vocab_size"] or vocab
    aux = config.get("eagle_aux_hidden_state_layer_ids")
    assert aux is None or (len(aux) == 3 and all(0 <= h < target_layers for h in aux))
    tensors = load_file(str(folder / WEIGHTS_FILE))
    assert set(tensors) - LOADABLE <= LAYER and set(tensors) >= LAYER, "names vLLM's load_weights maps"
    expected = {
        "fc.weight": (hidden, 3 * target_hidden),
        "layers.0.self_attn.q_proj.weight": (heads * head_dim, 2 * hidden),
        "layers.0.self_attn.k_proj.weight": (kv * head_dim, 2 * hidden),
        "layers.0.self_attn.v_proj.weight": (kv * head_dim, 2 * hidden),
        "layers.0.self_attn.o_proj.weight": (hidden, heads * head_dim),
        "layers.0.mlp.gate_proj.weight": (config["intermediate_size"], hidden),
        "layers.0.mlp.up_proj.weight": (config["intermediate_size"], hidden),
        "layers.0.mlp.down_proj.weight": (hidden, config["intermediate_size"]),
        "norm.weight": (hidden,),
        "lm_head.weight": (draft_vocab, hidden),
    }
    for name, shape in expected.items():
        assert tuple(tensors[name].shape) == shape, f"{name}: {tuple(tensors[name].shape)} != {shape}"
    if draft_vocab != vocab:
        d2t = tensors["d2t"]
        assert d2t.dtype == torch.int64 and d2t.shape == (draft_vocab,)
        targets = torch.arange(draft_vocab) + d2t
        assert (
            int(targets.min()) >= 0
            and int(targets.max()) < vocab
            and len(set(targets.tolist())) == draft_vocab
        )
        if "t2d" in tensors:
            assert tensors["t2d"].shape == (vocab,) and int(tensors["t2d"].sum()) == draft_vocab


@pytest.fixture(scope="module")
def target():
    return make_llama(len(make_tokenizer()), seed=0, layers=4)


@pytest.fixture
def exported(tmp_path, target) -> Path:
    head = make_eagle3_head(target, draft_ids=torch.arange(3, 200, 3))
    return save_head(head, tmp_path / "head", VERIFIER, speculative_tokens=4)


def test_an_exported_head_passes_vllms_checks_and_loads_back_unchanged(exported, target):
    assert_vllm_eagle3_ready(exported, target_layers=4, trained_with_norm_before_residual=False)
    assert vllm_config(json.loads((exported / CONFIG_FILE).read_text()))["num_speculative_tokens"] == 4
    head = make_eagle3_head(target, draft_ids=torch.arange(3, 200, 3))
    loaded = load_head(exported)
    assert loaded.aux_layers == head.aux_layers and torch.equal(loaded.draft_ids, head.draft_ids)
    for name, tensor in head.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


def broken(folder: Path, config_edit=None, tensor_edit=None) -> Path:
    config = json.loads((folder / CONFIG_FILE).read_text())
    tensors = load_file(str(folder / WEIGHTS_FILE))
    if config_edit:
        config_edit(config)
    if tensor_edit:
        tensor_edit(tensors)
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    save_file(tensors, str(folder / WEIGHTS_FILE))
    return folder


@pytest.mark.parametrize(
    "config_edit, tensor_edit",
    [
        (lambda c: c.pop("norm_before_residual"), None),
        (lambda c: c.update(model_type="llama"), None),
        (lambda c: c["speculators_config"].update(proposal_methods=[]), None),
        (lambda c: c.pop("transformer_layer_config"), None),
        (lambda c: c.update(eagle_aux_hidden_state_layer_ids=[1, 2, 9]), None),
        (None, lambda t: t.update({"lm_head.weight": t["lm_head.weight"][:-1]})),
        (None, lambda t: t.update({"model.fc.weight": t.pop("fc.weight")})),
        (None, lambda t: t.update({"d2t": t["d2t"] + 10_000})),
    ],
)
def test_negative_control_a_broken_export_fails_the_checks(exported, config_edit, tensor_edit):
    with pytest.raises((AssertionError, KeyError, IndexError)):
        assert_vllm_eagle3_ready(broken(exported, config_edit, tensor_edit), 4, False)


def test_a_head_written_in_the_layout_elsewhere_drafts_here_losslessly(tmp_path, target):
    """The fixture is written by hand, key by key, as another trainer would write it (no specdec saver)."""
    from specdec.decoders import PlainDecoding, Request, SpeculativeSampling, StopCriteria
    from specdec.drafters import make_drafter
    from specdec.engine import Engine
    from specdec.sampling import SamplingConfig, row_keys

    head = make_eagle3_head(target, seed=5, draft_ids=torch.arange(0, 300, 2))
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    layer = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4}
    layer |= {"num_key_value_heads": 2, "rms_norm_eps": 1e-6, "vocab_size": head.config.vocab_size}
    config = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "transformer_layer_config": layer | {"num_hidden_layers": 1},
        "draft_vocab_size": 150,
        "norm_before_residual": False,
        "eagle_aux_hidden_state_layer_ids": [1, 2, 3],
        "speculators_config": {"algorithm": "eagle3", "proposal_methods": [{"speculative_tokens": 3}],
                               "verifier": {"name_or_path": "tiny"}},
    }  # fmt: skip
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    tensors = {k: v.clone() for k, v in head.state_dict().items() if k != "t2d"}  # vLLM skips t2d
    tensors["embed_tokens.weight"] = target.get_input_embeddings().weight.detach().clone()  # the target's own
    save_file(tensors, str(folder / WEIGHTS_FILE))
    tok = make_tokenizer()
    drafter = make_drafter(f"eagle3:{folder}", target, tok)
    assert torch.equal(load_head(folder).lm_head.weight, head.lm_head.weight)
    prompts = [[1, 5, 9, 14, 22, 5, 9, 14], [1, 40, 41, 42, 40]]
    for sampling in (SamplingConfig(), SamplingConfig(temperature=0.8, top_p=0.9)):
        request = Request(prompts, sampling, StopCriteria(16), row_keys([3, 4], 1))
        runs = []
        for method, d in ((SpeculativeSampling(3), drafter), (PlainDecoding(), None)):
            loop = method.loop(Engine(target), d, request)
            while loop.active:
                loop.step()
            runs.append(loop.result().tokens)
        assert runs[0] == runs[1]


def test_folders_that_are_not_eagle3_heads_get_a_clear_error(tmp_path, exported):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / CONFIG_FILE).write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(InvalidArgumentError, match="not an EAGLE-3 head"):
        load_head(tmp_path / "other")
    config = json.loads((exported / CONFIG_FILE).read_text())
    config.pop("eagle_aux_hidden_state_layer_ids")
    (exported / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(InvalidArgumentError, match="target's depth"):
        load_head(exported)
    assert load_head(exported, target_layers=30).aux_layers == (2, 15, 27)  # vLLM's default
    trimmed = broken(exported, tensor_edit=lambda t: t.pop("d2t"))
    with pytest.raises(InvalidArgumentError, match="needs d2t"):
        load_head(trimmed, target_layers=30)
