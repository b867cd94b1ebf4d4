"""Build a drafter from a short spec string, as the CLI and benchmarks name them."""

from __future__ import annotations

import re
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Drafter
from specdec.drafters.bita import bita_drafter
from specdec.drafters.combined import LookupThenBiTADrafter, LookupThenModelDrafter
from specdec.drafters.derived import ReducedPrecisionDrafter, TruncatedDrafter
from specdec.drafters.eagle3 import Eagle3Drafter
from specdec.drafters.early_exit import EarlyExitDrafter
from specdec.drafters.model import ModelDrafter
from specdec.drafters.prompt_lookup import PromptLookupDrafter
from specdec.drafters.tandem import TandemDrafter
from specdec.errors import InvalidArgumentError
from specdec.models import PRECISIONS, default_cache_dir, load_model
from specdec.models.draft_vocab import VOCAB_FILE, top_tokens
from specdec.models.eagle3_layout import load_head
from specdec.models.packaged import (
    MANIFEST,
    exported_folder_name,
    packaged_drafts,
    packaged_eagle3s,
    packaged_tandem_folder,
    packaged_tandems,
)
from specdec.models.router import BlockRouter
from specdec.models.surgery import reduced_precision_copy
from specdec.models.tandem import SECONDARY_DIR, TandemModel

#: Every drafter spelling, one line each (``specdec drafters`` prints them).
DRAFTER_SPECS: tuple[tuple[str, str], ...] = (
    ("prompt-lookup", "n-gram lookup in the context: free, pays where the answer copies the prompt"),
    ("prompt-only-lookup", "the same, copying from the prompt only, not the answer so far (for BiLD)"),
    ("MODEL", "an independent small model with the target's tokenizer: a built-in name, HF folder or .gguf"),
    ("lookup+MODEL", "prompt lookup where the context has a match of 2+ tokens, the draft model elsewhere"),
    ("lookup+eagle3:PATH", "the same with an EAGLE-3 head (int8: / bf16: / tree-K: before eagle3: as below)"),
    (
        "lookup+bita:PATH",
        "the same with a BiTA adapter (bita[SHAPE]: as below); lookup's chain carries the adapter's masks",
    ),
    ("lookup-N+...", "any of the three with at most N lookup tokens a step (lookup+bita: 4 unless given)"),
    ("int8:MODEL", "the small model's linears quantised to int8 (dynamic): a cheaper draft, same output"),
    ("bf16:MODEL, fp16:MODEL", "the small model loaded in that precision"),
    ("vocab-N:MODEL", "its output head cut to the N tokens the target writes most (draft_vocab.json)"),
    ("tree-K:MODEL", "the small model's chain plus its next K-1 likeliest tokens at each depth (a tree)"),
    ("int8, bf16, fp16", "a reduced-precision copy of the target"),
    ("first-N", "the target's first N layers and head, own cache: an untrained baseline"),
    ("early-exit-N", "the target's first N layers on the target's cache (for `train early-exit` models)"),
    ("tandem:PATH", "a Tandem secondary reading the target's hidden states (Tandem + SPEED)"),
    ("tandem+router:PATH", "the same with its adaptive block length router (PATH/router)"),
    (
        "eagle3:PATH",
        "an EAGLE-3 head (speculators layout) reading three of the target's hidden states; PATH a folder "
        "or a packaged name",
    ),
    ("tree-K:eagle3:PATH", "the head's chain plus its next K-1 likeliest tokens at each depth (a tree)"),
    ("dtree-K:eagle3:PATH", "a tree of K nodes per draft position, grown where the head is surest (EAGLE-2)"),
    (
        "int8:eagle3:PATH",
        "the head's linears in int8 but the one reading the target's states (or bf16:, fp16:): "
        "fewer bytes per draft token",
    ),
    (
        "bita:PATH, bita[SHAPE]:PATH",
        "a BiTA adapter: the target drafts for itself; SHAPE efficient, straight, "
        "full-K, widths like 5/4/3 or auto (default: the shape `eval bita` measured fastest on this kind "
        "of device; unmeasured, efficient on a GPU and 2 elsewhere)",
    ),
)
SPECS_HINT = "a drafter spec (`specdec drafters` lists them)"
LOOKUP_FIRST = re.compile(r"lookup(?:-(\d+))?\+")  # lookup+INNER, lookup-N+INNER


# A draft's precision only changes how often it is accepted, never what the target emits.
DRAFT_DTYPES = ("bf16", "fp16")  # names load_model's dtype takes as they are


def make_drafter(
    spec: str,
    target: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase | None,
    **load_kwargs,
) -> Drafter:
    if not isinstance(spec, str) or not spec:
        raise InvalidArgumentError(f"drafter must be {SPECS_HINT}, got {spec!r}")
    if spec in PRECISIONS:
        return ReducedPrecisionDrafter(target, tokenizer, spec)
    if spec in ("prompt-lookup", "ngram"):
        return PromptLookupDrafter()
    if spec == "prompt-only-lookup":
        return PromptLookupDrafter(prompt_only=True)
    if spec.startswith("first-"):
        layers = spec.removeprefix("first-")
        if not layers.isdigit():
            raise InvalidArgumentError(f"drafter {spec!r}: expected first-N with N a number of layers")
        return TruncatedDrafter(target, tokenizer, int(layers))
    if spec.startswith("early-exit-"):
        layers = spec.removeprefix("early-exit-")
        if not layers.isdigit():
            raise InvalidArgumentError(f"drafter {spec!r}: expected early-exit-N with N a number of layers")
        return EarlyExitDrafter(target, int(layers))
    if is_bita(spec):
        return bita_drafter(spec, target)
    if spec.startswith(("lookup+", "lookup-")):
        return lookup_first_drafter(spec, target, tokenizer, **load_kwargs)
    if is_eagle3(spec):
        return eagle3_drafter(spec, target)
    return small_model_drafter(spec, tokenizer, **load_kwargs)


def is_bita(spec: str) -> bool:
    """Whether ``spec`` is spelled ``bita:PATH`` or ``bita[SHAPE]:PATH``."""
    return spec.startswith(("bita:", "bita["))


def drafts_with_bita(spec: str) -> bool:
    """Whether ``spec`` names a BiTA adapter, alone or behind prompt lookup."""
    match = LOOKUP_FIRST.match(spec)
    return is_bita(spec[match.end() :] if match else spec)


def lookup_first_drafter(
    spec: str, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, **load_kwargs
) -> Drafter:
    """``lookup+INNER`` or ``lookup-N+INNER`` (at most N lookup tokens a step): prompt lookup first, INNER
    (a draft model, an EAGLE-3 head or a BiTA adapter) where the context has no match."""
    match = LOOKUP_FIRST.match(spec)
    if match is None or (match[1] and int(match[1]) < 1):
        raise InvalidArgumentError(f"drafter {spec!r}: expected lookup+INNER or lookup-N+INNER with N >= 1")
    inner = spec[match.end() :]
    limit = {"max_lookup": int(match[1])} if match[1] else {}
    if is_bita(inner):
        return LookupThenBiTADrafter(bita_drafter(inner, target), name=spec, **limit)
    model = (
        eagle3_drafter(inner, target)
        if is_eagle3(inner)
        else small_model_drafter(inner, tokenizer, **load_kwargs)
    )
    return LookupThenModelDrafter(model, name=spec, **limit)


def is_eagle3(spec: str) -> bool:
    return "eagle3:" in spec.split("/")[0]  # among the prefixes before a path


def small_model_drafter(name: str, tokenizer: PreTrainedTokenizerBase | None, **load_kwargs) -> Drafter:
    """A drafter running a small model on its own cache: a draft model or a Tandem secondary, after the
    prefixes that make it cheaper or wider, in any order: tree-K:, vocab-N:, bf16: / fp16:, int8:."""
    spec, width, size, int8, dtype = name, 1, None, False, None
    while True:
        head, sep, rest = spec.partition(":")
        if sep and head in DRAFT_DTYPES:
            dtype, spec = head, rest
            continue
        if sep and head == "int8":
            int8, spec = True, rest
            continue
        if not sep or not head.startswith(("tree-", "vocab-")):
            break
        kind, _, number = head.partition("-")
        if not number.isdigit() or int(number) < (2 if kind == "tree" else 1):
            raise InvalidArgumentError(
                f"drafter {name!r}: expected tree-K:MODEL with K >= 2 or vocab-N:MODEL with N >= 1"
            )
        width, size = (int(number), size) if kind == "tree" else (width, int(number))
        spec = rest
    if is_bita(spec):  # the target drafts for itself: nothing of a small model's to quantise or widen
        raise InvalidArgumentError(
            f"drafter {name!r}: a BiTA adapter takes a tree shape (bita[SHAPE]:PATH), not tree-K:, vocab-N:, "
            "int8:, bf16: or fp16:"
        )
    if spec.startswith(("tandem:", "tandem+router:")):
        if width != 1 or dtype is not None:
            raise InvalidArgumentError(f"drafter {name!r}: a Tandem secondary takes vocab-N: and int8: only")
        kind, _, path = spec.partition(":")
        folder = tandem_folder(path, load_kwargs.get("cache_dir"))
        router = BlockRouter.from_pretrained(folder / "router") if kind == "tandem+router" else None
        tandem, keep = TandemModel.from_pretrained(folder), None
        if size is not None:
            keep = top_tokens(vocab_folder(str(folder)), size, eos_ids(tandem.secondary))
        return TandemDrafter(tandem, tokenizer, name=name, router=router, vocab=keep, int8=int8)
    loaded = load_model(spec, **(load_kwargs if dtype is None else {**load_kwargs, "dtype": dtype}))
    keep = None if size is None else top_tokens(vocab_folder(spec), size, eos_ids(loaded.model))
    return ModelDrafter(loaded.model, loaded.tokenizer, name=name, tree_width=width, vocab=keep, int8=int8)


def eagle3_drafter(spec: str, target: PreTrainedModel) -> Eagle3Drafter:
    """``eagle3:PATH`` after the prefixes, in any order: ``tree-K:`` (a top-k tree, K >= 2) or
    ``dtree-K:`` (a dynamic tree of K nodes per draft position), and ``int8:`` / ``bf16:`` / ``fp16:``
    (the head in reduced precision: one layer whose weights are re-read from memory every draft token,
    so its bytes are its cost)."""
    rest, width, dynamic, precision = spec, 1, False, None
    while not rest.startswith("eagle3:"):
        head, _, rest = rest.partition(":")
        kind, _, size = head.partition("-")
        if head in PRECISIONS and precision is None:
            precision = head
        elif kind in ("tree", "dtree") and size.isdigit() and int(size) >= 2 and width == 1:
            width, dynamic = int(size), kind == "dtree"
        else:
            raise InvalidArgumentError(
                f"drafter {spec!r}: expected [tree-K:|dtree-K:][int8:|bf16:|fp16:]eagle3:PATH with K >= 2"
            )
    path = rest.removeprefix("eagle3:")
    if precision == "int8" and target.device.type != "cpu":
        raise InvalidArgumentError(f"drafter {spec!r}: an int8 head runs on CPU only; use bf16: on a GPU")
    folder = (
        Path(path) if Path(path).is_dir() or path not in (shipped := packaged_eagle3s()) else shipped[path]
    )
    head = load_head(folder, target.config.get_text_config().num_hidden_layers)
    if precision is not None:
        # fc reads the target's raw hidden states (massive activations): quantised, its input keeps a few
        # levels per channel and the int8 head's first draft after a prompt was rejected on 15 of 15
        # Spec-Bench prompts (benchmarks/HEAD_PRECISION_2026-11-27e.md)
        head = reduced_precision_copy(head, precision, keep=("fc",))
    embeddings = target.get_input_embeddings().weight
    return Eagle3Drafter(head, embeddings, tree_width=width, dynamic=dynamic, name=spec)


def eos_ids(model: PreTrainedModel) -> list[int]:
    """The model's end-of-sequence token(s): a trimmed head keeps them, so drafts can end."""
    eos = model.config.eos_token_id
    return [t for t in (eos if isinstance(eos, list) else [eos]) if t is not None]


def vocab_folder(model_spec: str) -> Path:
    """Where ``vocab-N:MODEL`` finds the token counts: the draft's folder, or a packaged draft's."""
    if Path(model_spec).is_dir():
        return Path(model_spec)
    if model_spec in (drafts := packaged_drafts()):
        return drafts[model_spec]
    raise InvalidArgumentError(
        f"vocab-N:{model_spec} needs a draft folder (or a packaged draft name) holding {VOCAB_FILE}"
    )


def tandem_folder(name_or_path: str, cache_dir: str | None = None) -> Path:
    """A Tandem folder: a trained one's path, or a packaged secondary, by name or by the path of an exported
    folder (`train export`: its secondary shares the base's tensors; rebuilt in the cache once)."""
    path = Path(name_or_path)
    if path.is_dir():
        if not (path / SECONDARY_DIR / MANIFEST).is_file():
            return path
        name, folder = exported_folder_name(path), path
    elif name_or_path in (tandems := packaged_tandems()):
        name, folder = name_or_path, tandems[name_or_path]
    else:
        return path

    def load_base(base: str):
        loaded = load_model(base, cache_dir=cache_dir)
        return loaded.model, loaded.tokenizer

    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    return packaged_tandem_folder(name, folder, cache, load_base)
