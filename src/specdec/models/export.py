"""A draft as a plain Hugging Face folder that vLLM and SGLang load as their draft model.

A packaged draft stores only its own layers and borrows the target's embeddings
(:mod:`specdec.models.packaged`), a layout no serving engine reads. vLLM's ``method: "draft_model"`` and
SGLang's ``STANDALONE`` load an ordinary checkpoint of an architecture they implement, so this writes one:
the complete draft (``config.json``, ``model.safetensors``) at the target's vocabulary size, the target's
tokenizer files and generation config, and ``specdec_export.json`` saying what it was made from.

Why each rule (vLLM read at the commits docs/export.md cites):

- the draft's ``vocab_size`` must equal the target's or vLLM refuses to start
  (``verify_equal_vocab_size_if_draft_model``, vllm/config/speculative.py, run again by
  ``DraftModelProposer``, vllm/v1/spec_decode/draft_model.py). A draft with fewer rows is grown to the
  target's size, its missing rows taken from the target: a trimmed head (``vocab-N:``) is a runtime
  option of specdec's, and vLLM's draft_model always computes the full head;
- the architecture must be one vLLM's model registry implements (vllm/model_executor/models/registry.py);
- vLLM re-detects the method from the draft's path even when ``draft_model`` is given: a path holding
  "eagle-", "eagle3", "dflash" or "dspark" would be loaded as that kind of head (vllm/config/speculative.py);
- vLLM tokenizes with the target's tokenizer and runs the draft in the target's dtype, so the copied
  tokenizer makes the folder self-describing (and equal for SGLang) rather than changing what vLLM does.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from specdec.errors import InvalidArgumentError
from specdec.models.conversion import default_cache_dir
from specdec.models.loading import load_model, local_hf_folder, resolve_dtype
from specdec.models.packaged import drafter_digest, packaged_drafts
from specdec.models.vocabulary import output_vocab_size

#: Draft architectures checked against vLLM's registry (``_TEXT_GENERATION_MODELS``); others may work
#: there too, but were not checked, so the export refuses them rather than write a folder vLLM rejects.
VLLM_ARCHITECTURES = (
    *("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GemmaForCausalLM"),
    *("Gemma2ForCausalLM", "Phi3ForCausalLM", "GPT2LMHeadModel", "GPTNeoXForCausalLM", "OPTForCausalLM"),
)
#: Parts of a draft's path that make vLLM load it as an EAGLE / DFlash / DSpark head instead.
METHOD_NAME_PARTS = ("eagle-", "eagle3", "dflash", "dspark")
#: The target's files copied as they are (those it has): tokenizer, chat template, generation defaults.
TARGET_FILES = (
    *("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"),
    *("chat_template.jinja", "chat_template.json", "tokenizer.model", "vocab.json", "merges.txt"),
    "generation_config.json",
)
TOKENIZER_CORE = ("tokenizer.json", "tokenizer.model", "vocab.json")  # at least one must exist
RECORD = "specdec_export.json"
#: Drafter-spec prefixes that are specdec runtime options, not weights: dropped, and recorded as dropped.
DROPPED_PREFIXES = ("tree-", "dtree-", "vocab-", "int8", "bf16", "fp16")


@dataclass(frozen=True)
class ServingExport:
    folder: Path  # the exported draft
    target: Path  # the target's HF folder: what ``vllm serve`` / ``--model-path`` is given
    record: dict[str, Any]  # what specdec_export.json holds


def bare_draft(spec: str) -> tuple[str, list[str]]:
    """The draft model a drafter spec names, and the runtime prefixes (``vocab-N:``, ``int8:``, ...) it
    drops: vLLM and SGLang run the full head in the target's dtype, one chain per step."""
    dropped = []
    while (head := spec.partition(":")[0]) != spec and head.startswith(DROPPED_PREFIXES):
        dropped.append(head)
        spec = spec.partition(":")[2]
    path = Path(spec).expanduser()
    if spec not in packaged_drafts() and not (path.is_dir() and (path / "config.json").is_file()):
        raise InvalidArgumentError(
            f"draft {spec!r} not found: give a packaged draft ({', '.join(packaged_drafts()) or 'none'}) "
            "or a folder holding an HF causal LM (config.json and weights)"
        )
    return spec, dropped


def _load_draft(name: str, cache_dir: Path) -> tuple[PreTrainedModel, Any]:
    """The draft in fp32 and its tokenizer (None where a folder has none: its vocabulary is still checked
    by size). Packaged drafts are rebuilt by :func:`load_model` (base tensors + the draft's own)."""
    path = Path(name).expanduser()
    if name in packaged_drafts() or any((path / f).is_file() for f in TOKENIZER_CORE):
        loaded = load_model(name, dtype="float32", cache_dir=cache_dir)
        return loaded.model, loaded.tokenizer
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval(), None


def _fit_vocabulary(model: PreTrainedModel, vocab: int, target_folder: Path) -> int | None:
    """Grow a draft with fewer token rows than the target's vocabulary to its size (the missing
    embedding and head rows are the target's); returns the rows it had, or None if it fitted."""
    rows = model.get_input_embeddings().weight.shape[0]
    heads = output_vocab_size(model)
    if rows == heads == vocab:
        model.config.get_text_config().vocab_size = vocab
        return None
    if max(rows, heads) > vocab:
        raise InvalidArgumentError(
            f"the draft has {max(rows, heads)} token rows, more than the target's vocabulary ({vocab}): "
            "it does not use the target's vocabulary"
        )
    target = AutoModelForCausalLM.from_pretrained(target_folder, dtype=torch.float32)
    if target.get_input_embeddings().weight.shape[1] != model.get_input_embeddings().weight.shape[1]:
        raise InvalidArgumentError(
            f"the draft has {min(rows, heads)} of the target's {vocab} token rows and a different width, "
            "so the missing rows cannot be the target's; export a draft with the full vocabulary"
        )
    model.resize_token_embeddings(vocab, mean_resizing=False)
    embed, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    with torch.no_grad():
        embed[rows:] = target.get_input_embeddings().weight[rows:]
        if head is not embed:
            head[heads:] = target.get_output_embeddings().weight[heads:]
    return min(rows, heads)


def _fresh_folder(output: Path) -> Path:
    """A temporary sibling of ``output`` to write into; ``output`` may only be empty or an earlier export,
    so a wrong path never loses a user's files."""
    if output.exists() and any(output.iterdir()) and not (output / RECORD).is_file():
        raise InvalidArgumentError(f"{output} exists and is not a specdec export; choose a new folder")
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent))
    tmp.chmod(0o755)
    return tmp


def _mirror_rope_theta(config_file: Path) -> None:
    """transformers 5 writes ``rope_theta`` inside ``rope_parameters``; a serving engine on transformers 4
    would read the top-level key and fall back to its default theta without a word. Both keys agree."""
    config = json.loads(config_file.read_text())
    rope = config.get("rope_parameters")
    if isinstance(rope, dict) and rope.get("rope_type") == "default" and "rope_theta" not in config:
        config["rope_theta"] = rope.get("rope_theta")
        config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def export_for_serving(
    draft: str | os.PathLike,
    target: str | os.PathLike = "smollm2-135m",
    output: str | os.PathLike = "draft-export",
    *,
    dtype: str | torch.dtype = "float32",
    cache_dir: str | os.PathLike | None = None,
) -> ServingExport:
    """Write ``draft`` (a packaged draft name or an HF folder, optionally with runtime prefixes, which are
    dropped) as an HF folder vLLM's ``draft_model`` and SGLang's ``STANDALONE`` load next to ``target``."""
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    output, torch_dtype = Path(output).expanduser().resolve(), resolve_dtype(dtype)
    if hits := [p for p in METHOD_NAME_PARTS if p in str(output).lower()]:
        raise InvalidArgumentError(
            f"the output path {output} contains {hits[0]!r}: vLLM would load it as that kind of head, "
            "not as a draft model; choose a path without it"
        )
    name, dropped = bare_draft(os.fspath(draft))
    target_folder = local_hf_folder(target, cache)
    if not any((target_folder / f).is_file() for f in TOKENIZER_CORE):
        raise InvalidArgumentError(f"target folder {target_folder} has no tokenizer file ({TOKENIZER_CORE})")
    model, tokenizer = _load_draft(name, cache)
    architecture = _servable_architecture(model, tokenizer, target_folder)
    vocab = AutoConfig.from_pretrained(target_folder).get_text_config().vocab_size
    padded_from = _fit_vocabulary(model, vocab, target_folder)
    model = model.to(torch_dtype)
    record = {
        "format": 1,
        "draft": os.fspath(draft),
        "draft_model": name,
        "dropped": dropped,
        "draft_sha256_16": drafter_digest(name),
        "target": os.fspath(target),
        "target_folder": str(target_folder),
        "architecture": architecture,
        "vocab_size": vocab,
        "padded_from": padded_from,
        "dtype": str(model.dtype).removeprefix("torch."),
        "tokenizer_checked": tokenizer is not None,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "specdec_version": importlib.metadata.version("specdec"),
    }
    _write_folder(output, model, target_folder, record)
    return ServingExport(output, target_folder, record)


def _servable_architecture(model: PreTrainedModel, tokenizer: Any, target_folder: Path) -> str:
    """The draft's architecture, once it is one vLLM loads and verifies against the target's words."""
    target_tokens = AutoTokenizer.from_pretrained(target_folder).get_vocab()
    if tokenizer is not None and tokenizer.get_vocab() != target_tokens:
        raise InvalidArgumentError(
            f"the draft's tokenizer ({len(tokenizer)} entries) differs from the target's: vLLM would verify "
            "its token ids against other words; export a draft trained with the target's tokenizer"
        )
    architecture = (model.config.architectures or [type(model).__name__])[0]
    if architecture not in VLLM_ARCHITECTURES:
        raise InvalidArgumentError(
            f"draft architecture {architecture} was not checked against vLLM's registry; checked: "
            f"{', '.join(VLLM_ARCHITECTURES)}"
        )
    return architecture


def _write_folder(output: Path, model: PreTrainedModel, target_folder: Path, record: dict) -> None:
    """Write the folder beside ``output`` and move it into place whole: a failed export leaves no half
    folder, and a server reading the old one never sees a mix."""
    tmp = _fresh_folder(output)
    try:
        model.save_pretrained(tmp)
        _mirror_rope_theta(tmp / "config.json")
        for file in TARGET_FILES:
            if (target_folder / file).is_file():
                shutil.copyfile(target_folder / file, tmp / file)
        (tmp / RECORD).write_text(json.dumps(record, indent=1) + "\n")
        for file in tmp.iterdir():  # transformers writes weights 0600; a server may run as another user
            file.chmod(0o644)
        if output.exists():
            shutil.rmtree(output)
        os.replace(tmp, output)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def serve_commands(export: ServingExport, k: int = 5) -> dict[str, str]:
    """The vLLM and SGLang command lines serving the target with this draft, ``k`` drafted tokens a step
    (SGLang: a chain, topk 1, so its verify width is k + 1)."""
    target, draft = shlex.quote(str(export.target)), shlex.quote(str(export.folder))
    spec = {"method": "draft_model", "model": str(export.folder), "num_speculative_tokens": k}
    return {
        "vllm": f"vllm serve {target} --speculative-config {shlex.quote(json.dumps(spec))}",
        "sglang": (
            f"python -m sglang.launch_server --model-path {target} --speculative-algorithm STANDALONE "
            f"--speculative-draft-model-path {draft} --speculative-num-steps {k} "
            f"--speculative-eagle-topk 1 --speculative-num-draft-tokens {k + 1}"
        ),
    }
