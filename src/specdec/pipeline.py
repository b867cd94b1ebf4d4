"""The user-facing entry point: text in, text out, one target, optionally one drafter."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from jinja2 import TemplateError
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.decoders import (
    DecodingMethod,
    GenerationStats,
    Request,
    StopCriteria,
    StreamCallback,
    make_method,
)
from specdec.drafters import Drafter
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError, PromptError
from specdec.inputs import (
    as_batch,
    check_count,
    check_flag,
    check_messages,
    check_seeds,
    check_stop,
    token_ids,
)
from specdec.models.vocabulary import output_vocab_size
from specdec.sampling import SamplingConfig, row_keys

Prompt = str | Sequence[int] | torch.Tensor | Sequence[dict]


@dataclass
class GenerationResult:
    texts: list[str]
    token_ids: list[list[int]]
    finish_reasons: list[str]
    from_draft: list[list[bool]]  # per token: True if it was an accepted draft token
    stats: GenerationStats

    @property
    def text(self) -> str:
        return self.texts[0]


def eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> frozenset[int]:
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        value = getattr(source, "eos_token_id", None) if source is not None else None
        ids.update([value] if isinstance(value, int) else value or [])
    return frozenset(ids)


class Pipeline:
    """A target model (and optional drafter) ready to generate.

    The engine (and its packed weights) is built once here and reused by every call. ``compile``:
    the target's steps and verify blocks run as static-shape ``torch.compile`` graphs
    (:meth:`specdec.engine.Engine.compile_steps`), those of one prompt with this pipeline's drafter
    compiled here (plain decoding's too when there is no drafter; with a drafter reading the target's
    hidden states, plain decoding compiles its own step at first use); a drafter's own engine can opt in
    the same way.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        drafter: Drafter | None = None,
        pack_weights: bool | None = None,
        compile: bool = False,
    ):
        if not isinstance(model, PreTrainedModel):
            raise InvalidArgumentError(
                f"model must be a transformers PreTrainedModel, got {type(model).__name__}"
            )
        if drafter is not None and not isinstance(drafter, Drafter):
            raise InvalidArgumentError(
                f"drafter must be a specdec Drafter (see make_drafter), got {drafter!r}"
            )
        check_flag("pack_weights", pack_weights)
        check_flag("compile", compile, allow_none=False)
        self.model, self.tokenizer = model, tokenizer
        # Compiled, the engine warms only the shapes this pipeline's decoding meets (warm_up below).
        self.engine = Engine(model, pack_weights=pack_weights, compile=compile, warm_up=False)
        self.drafter = drafter
        if drafter is not None:
            drafter.validate(model, tokenizer)
            drafter.attach(self.engine)
        self.vocab_size = output_vocab_size(model)
        self.warm_up(batched=False)

    def warm_up(self, batched: bool = True) -> None:
        """Compile now every shape a compiled engine's steps meet, with the hidden states this pipeline's
        drafter reads (:meth:`~specdec.engine.Engine.warm_up_serving`), so that no request waits through a
        compile: one-token steps, and verify blocks where there is a drafter; ``batched``: also the shapes
        of rows joining and leaving a batch (a server; not one prompt at a time). Nothing to do without
        ``compile``."""
        drafter = self.drafter
        self.engine.warm_up_serving(
            () if drafter is None else drafter.target_hidden_layers,
            widths=(1,) if drafter is None else (1, 2),
            batched=batched,
            embeds=drafter is not None and drafter.gives_embeddings,
        )

    def with_drafter(self, drafter: Drafter) -> Pipeline:
        """A pipeline sharing this one's engine (and packed weights) with another drafter (compiled: the
        shapes only it meets compile at first use, or in its :meth:`warm_up`)."""
        if not isinstance(drafter, Drafter):
            raise InvalidArgumentError(
                f"drafter must be a specdec Drafter (see make_drafter), got {drafter!r}"
            )
        drafter.validate(self.model, self.tokenizer)
        drafter.attach(self.engine)
        other = copy.copy(self)
        other.drafter = drafter
        return other

    def encode(self, prompt: Prompt, chat: bool | None = None) -> list[int]:
        """Token ids of one prompt: text (as a user message with ``chat=True``), token ids, or a chat."""
        if isinstance(prompt, str):
            if not prompt:
                raise PromptError("prompt is empty")
            if chat:
                return self._chat([{"role": "user", "content": prompt}])
            return self._tokenizer().encode(prompt, add_special_tokens=True)
        if isinstance(prompt, list | tuple) and prompt and isinstance(prompt[0], dict):
            return self._chat(check_messages(prompt))
        if isinstance(prompt, list | tuple | torch.Tensor):
            return token_ids(prompt, self.vocab_size)
        raise PromptError(
            f"a prompt must be text, token ids or a chat (list of messages), got {type(prompt).__name__}"
        )

    def _tokenizer(self) -> PreTrainedTokenizerBase:
        if self.tokenizer is None:
            raise InvalidArgumentError("text prompts need a tokenizer; pass one or give token ids")
        return self.tokenizer

    def _chat(self, messages: list[dict]) -> list[int]:
        tokenizer = self._tokenizer()
        if not tokenizer.chat_template:
            raise InvalidArgumentError("this tokenizer has no chat template; pass plain text with chat=False")
        try:
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        except (TemplateError, TypeError, ValueError, KeyError) as err:
            raise PromptError(f"the tokenizer's chat template cannot render these messages: {err}") from err
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    def generate(
        self,
        prompts: Prompt | Sequence[Prompt],
        *,
        method: str | DecodingMethod | None = None,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        num_samples: int = 1,
        stop: str | Sequence[str] = (),
        seed: int | Sequence[int] | None = None,
        chat: bool | None = None,
        stream: StreamCallback | None = None,
    ) -> GenerationResult:
        """Generate for one prompt or a batch; ``num_samples`` completions per prompt.

        A prompt is text, token ids (a list or a 1-D tensor; a 2-D tensor is a batch), or a chat (list
        of ``{"role", "content"}`` messages, rendered with the tokenizer's chat template); ``chat=True``
        renders plain text as a user message. ``method`` is a :class:`~specdec.decoders.DecodingMethod`
        (``SpeculativeSampling(gamma=4)``, ``BiLD(0.5, 3.0)``, ``PlainDecoding()``) or its name
        ("sps", "bild", "plain"); by default SpS when the pipeline has a drafter, else plain decoding.
        Greedy when ``temperature == 0``. ``seed``: one int for every prompt, one per prompt, or None
        for fresh randomness; see the README for what a seed guarantees.
        """
        sampling = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p)
        check_count("max_new_tokens", max_new_tokens)
        check_count("num_samples", num_samples)
        check_flag("chat", chat)
        if stream is not None and not callable(stream):
            raise InvalidArgumentError(
                f"stream must be a callable(row, token_ids, from_draft), got {stream!r}"
            )
        method = make_method(method, self.drafter is not None)
        if method.needs_drafter and self.drafter is None:
            raise InvalidArgumentError(f"method {method.name!r} needs a drafter: build the Pipeline with one")
        stop_strings = check_stop(stop)
        if stop_strings and self.tokenizer is None:
            raise InvalidArgumentError("stop strings need a tokenizer to decode the output")
        request = self._request(
            prompts, chat, seed, num_samples, max_new_tokens, sampling, stop_strings, stream
        )
        out = method.decode(self.engine, self.drafter if method.needs_drafter else None, request)
        texts = [
            self.tokenizer.decode(t, skip_special_tokens=True) if self.tokenizer else "" for t in out.tokens
        ]
        return GenerationResult(texts, out.tokens, out.finish_reasons, out.from_draft, out.stats)

    def _request(
        self,
        prompts: Prompt | Sequence[Prompt],
        chat: bool | None,
        seed: int | Sequence[int] | None,
        num_samples: int,
        max_new_tokens: int,
        sampling: SamplingConfig,
        stop_strings: tuple[str, ...],
        stream: StreamCallback | None,
    ) -> Request:
        """The decoders' request for these prompts, once they fit: encoded, each repeated ``num_samples``
        times with its own seed key."""
        batch = as_batch(prompts)
        seeds = check_seeds(seed, len(batch))
        encoded = [self.encode(p, chat) for p in batch]
        limit = self.engine.max_positions
        longest = max(len(ids) for ids in encoded)
        if limit is not None and longest > limit:
            raise PromptError(
                f"prompt of {longest} tokens does not fit the model's context of {limit} tokens"
            )
        # The cache a request can grow to (capped at the context window) must fit, checked before
        # any per-row work: num_samples=10**9 is an error now, not an hour of list building.
        self.engine.check_fits(
            len(encoded) * num_samples, self.engine.first_capacity(longest + max_new_tokens)
        )
        return Request(
            prompts=[ids for ids in encoded for _ in range(num_samples)],
            sampling=sampling,
            stop=StopCriteria(
                max_new_tokens=max_new_tokens,
                eos_token_ids=eos_token_ids(self.model, self.tokenizer),
                stop_strings=stop_strings,
                decode=self.tokenizer.decode if self.tokenizer is not None else None,
            ),
            keys=row_keys(seeds, num_samples),
            callback=stream,
        )
