"""Runs one benchmark method on one prompt: our engines (eager or fast) and HF ``generate`` (plain,
static-cache compiled, assisted), holding the models and drafters once for a whole run."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import torch
from transformers import CompileConfig, StaticCache

from specdec.decoders import PlainDecoding, SpeculativeSampling
from specdec.decoders.stats import sync_device
from specdec.drafters import ModelDrafter, PromptLookupDrafter
from specdec.engine import Engine
from specdec.engine.modeling import with_cache
from specdec.pipeline import Pipeline


@dataclass(frozen=True)
class BenchMethod:
    name: str
    kind: str  # "hf-plain", "hf-static-compile", "hf-assisted", "plain" or "sps"
    drafter: str | None = None
    gamma: str = "adaptive"
    verify: str = "coupled"
    engine: str = "eager"  # "fast": the target's verify blocks compiled


class Runner:
    """Holds the models and drafters once; runs one method on one prompt."""

    def __init__(
        self,
        model,
        tokenizer,
        drafters: dict,
        sampling: dict,
        num_samples: int = 1,
        static_cache_len: int = 0,
        fast: bool = False,
    ):
        self.model, self.tokenizer, self.sampling = model, tokenizer, sampling
        self.num_samples, self.drafters = num_samples, drafters
        self.pipes = {"eager": Pipeline(model, tokenizer)}
        # The fast target compiles its verify graph as it is built (its build time is reported);
        # on CPU drafters step eagerly (lean) under both targets, so the rows share them; on CUDA the
        # fast rows' model drafters replay CUDA graphs too (an eager step there is launch-bound).
        self.fast_build_seconds: float | None = None
        self.fast_drafters = drafters
        if fast:
            started = time.perf_counter()
            self.pipes["fast"] = Pipeline(model, tokenizer, compile=True)
            self.fast_build_seconds = time.perf_counter() - started
            if model.device.type == "cuda":
                self.fast_drafters = {name: graphed(d) for name, d in drafters.items()}
        self.static_cache_len = static_cache_len
        self._compiled = None

    def run(self, method: BenchMethod, prompt_ids: list[int], max_new_tokens: int, seed: int = 0) -> dict:
        if method.kind.startswith("hf"):
            return self._run_hf(method, prompt_ids, max_new_tokens)
        if method.kind == "plain":
            pipe, decoding = self.pipes[method.engine], PlainDecoding()
        else:
            drafters = self.fast_drafters if method.engine == "fast" else self.drafters
            pipe = self.pipes[method.engine].with_drafter(drafters[method.drafter])
            decoding = SpeculativeSampling(method.gamma, method.verify)
        out = pipe.generate(
            prompt_ids,
            method=decoding,
            max_new_tokens=max_new_tokens,
            seed=seed,
            num_samples=self.num_samples,
            **self.sampling,
        )
        tokens = [t for row in out.token_ids for t in row]  # every sample's tokens, in order
        return {"tokens": tokens, "time": out.stats.total_time, "stats": out.stats.as_dict()}

    def _run_hf(self, method: BenchMethod, prompt_ids: list[int], max_new_tokens: int) -> dict:
        kwargs = dict(
            max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
        )
        model = self.model
        if method.kind == "hf-static-compile":
            model = self._compiled = self._compiled or compiled_decoding(self.model)
            # One cache length for every prompt: its shape is what the compiled step specialises on.
            cache = StaticCache(config=self.model.config, max_cache_len=self.static_cache_len)
            kwargs.update(with_cache(self.model, cache))  # generate renamed it in the same release
        if method.kind == "hf-assisted":
            drafter = self.drafters[method.drafter]
            if isinstance(drafter, PromptLookupDrafter):
                kwargs["prompt_lookup_num_tokens"] = 10  # HF's documented setting
            elif isinstance(drafter, ModelDrafter):
                kwargs["assistant_model"] = drafter.model
            else:
                raise ValueError(f"no HF equivalent for drafter {method.drafter}")
        ids = torch.tensor([prompt_ids], device=self.model.device)
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
        sync_device(ids.device)
        elapsed = time.perf_counter() - start
        return {"tokens": out[0, len(prompt_ids) :].tolist(), "time": elapsed, "stats": None}


def graphed(drafter):
    """A model drafter's copy whose own engine replays CUDA graphs (others as they are)."""
    if not isinstance(drafter, ModelDrafter):
        return drafter
    fast = copy.copy(drafter)
    fast.engine = Engine(drafter.engine.model, pack_weights=False)
    fast.engine.capture_graphs()
    return fast


def compiled_decoding(model):
    """HF's compiled configuration: a view of ``model`` whose one-token (decoding) forwards run under
    ``torch.compile`` with transformers' ``CompileConfig`` defaults, prefill eager, as ``generate``
    does by itself on GPUs with a static cache (on CPU it only does so behind a private flag)."""
    config = CompileConfig()
    compiled = torch.compile(
        model.forward,
        fullgraph=config.fullgraph,
        dynamic=config.dynamic,
        backend=config.backend,
        mode=config.mode,
        options=config.options,
    )
    eager = model.forward

    def forward(*args, **kwargs):
        ids = kwargs.get("input_ids")
        return (compiled if ids is not None and ids.shape[1] == 1 else eager)(*args, **kwargs)

    view = copy.copy(model)  # shares every module and weight; only ``forward`` differs
    view.forward = forward
    return view


def static_cache_length(prompt_lengths: list[int], max_new_tokens: int, multiple: int = 256) -> int:
    """The one static cache length that holds every prompt and its answer, rounded up."""
    longest = max(prompt_lengths) + max_new_tokens
    return -(-longest // multiple) * multiple
