"""The user-facing entry point: text in, text out, one target, optionally one drafter."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.decoders import (
    BildConfig,
    GammaPolicy,
    GenerationStats,
    StopCriteria,
    StreamCallback,
    autoregressive_generate,
    bild_generate,
    make_gamma_policy,
    speculative_generate,
)
from specdec.drafters import Drafter
from specdec.drafters.model import output_vocab_size
from specdec.engine import Engine
from specdec.errors import InvalidArgumentError, PromptError
from specdec.sampling import SamplingConfig

Prompt = str | Sequence[int] | Sequence[dict]


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


def _is_single(prompts: Any) -> bool:
    if isinstance(prompts, str):
        return True
    items = list(prompts)
    if not items:
        return False
    return all(isinstance(x, int) for x in items) or isinstance(items[0], dict)


def eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> frozenset[int]:
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        value = getattr(source, "eos_token_id", None) if source is not None else None
        ids.update([value] if isinstance(value, int) else value or [])
    return frozenset(ids)


class Pipeline:
    """A target model (and optional drafter) ready to generate.

    The engine (and its packed weights) is built once here and reused by every call.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        drafter: Drafter | None = None,
        pack_weights: bool | None = None,
    ):
        self.model, self.tokenizer = model, tokenizer
        self.engine = Engine(model, pack_weights=pack_weights)
        self.drafter = drafter
        if drafter is not None:
            drafter.validate(model, tokenizer)
            drafter.attach(self.engine)
        self.vocab_size = output_vocab_size(model)

    def with_drafter(self, drafter: Drafter) -> Pipeline:
        """A pipeline sharing this one's engine (and packed weights) with another drafter."""
        drafter.validate(self.model, self.tokenizer)
        drafter.attach(self.engine)
        other = copy.copy(self)
        other.drafter = drafter
        return other

    def encode(self, prompt: Prompt, chat: bool | None) -> list[int]:
        if isinstance(prompt, str):
            if not prompt:
                raise PromptError("prompt is empty")
            if chat:
                return self._chat([{"role": "user", "content": prompt}])
            return self._tokenizer().encode(prompt, add_special_tokens=True)
        items = list(prompt)
        if not items:
            raise PromptError("prompt is empty")
        if isinstance(items[0], dict):
            return self._chat(items)
        ids = [int(t) for t in items]
        if min(ids) < 0 or max(ids) >= self.vocab_size:
            raise PromptError(
                f"prompt token ids must be in [0, {self.vocab_size}), got {min(ids)}..{max(ids)}"
            )
        return ids

    def _tokenizer(self) -> PreTrainedTokenizerBase:
        if self.tokenizer is None:
            raise InvalidArgumentError("text prompts need a tokenizer; pass one or give token ids")
        return self.tokenizer

    def _chat(self, messages: list[dict]) -> list[int]:
        tokenizer = self._tokenizer()
        if not tokenizer.chat_template:
            raise InvalidArgumentError("this tokenizer has no chat template; pass plain text with chat=False")
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    def generate(
        self,
        prompts: Prompt | Sequence[Prompt],
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        top_k: int = 0,
        top_p: float = 1.0,
        gamma: int | str | GammaPolicy = "adaptive",
        speculative: bool | None = None,
        bild: BildConfig | None = None,
        num_samples: int = 1,
        stop: Sequence[str] = (),
        seed: int | None = None,
        chat: bool | None = None,
        stream: StreamCallback | None = None,
    ) -> GenerationResult:
        """Generate for one prompt or a batch; ``num_samples`` completions per prompt.

        A prompt is text, token ids, or a chat (list of ``{"role", "content"}`` messages, rendered
        with the tokenizer's chat template); ``chat=True`` renders plain text as a user message.
        ``speculative`` defaults to "if a drafter was given". Greedy when ``temperature == 0``.
        ``bild`` switches from lossless speculative sampling to Big Little Decoder with those
        thresholds (faster, not lossless); ``gamma`` is then unused (BiLD's cap replaces it).
        """
        sampling = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p)
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise InvalidArgumentError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        if not isinstance(num_samples, int) or num_samples < 1:
            raise InvalidArgumentError(f"num_samples must be an integer >= 1, got {num_samples!r}")
        policy = make_gamma_policy(gamma)
        batch = [prompts] if _is_single(prompts) else list(prompts)
        if not batch:
            raise PromptError("no prompts given")
        encoded = [self.encode(p, chat) for p in batch for _ in range(num_samples)]
        limit = self.engine.max_positions
        longest = max(len(ids) for ids in encoded)
        if limit is not None and longest >= limit:
            raise PromptError(
                f"prompt of {longest} tokens does not fit the model's context of {limit} tokens"
            )
        stop_criteria = StopCriteria(
            max_new_tokens=max_new_tokens,
            eos_token_ids=eos_token_ids(self.model, self.tokenizer),
            stop_strings=tuple(stop),
            decode=self.tokenizer.decode if self.tokenizer is not None else None,
        )
        generator = torch.Generator()
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
        if bild is not None and speculative is False:
            raise InvalidArgumentError("bild needs the drafter: don't pass speculative=False with it")
        speculative = self.drafter is not None if speculative is None else speculative
        if (speculative or bild is not None) and self.drafter is None:
            raise InvalidArgumentError("speculative decoding and BiLD need a drafter")
        common = dict(sampling=sampling, stop=stop_criteria, generator=generator, callback=stream)
        if bild is not None:
            out = bild_generate(self.engine, self.drafter, encoded, config=bild, **common)
        elif speculative:
            out = speculative_generate(self.engine, self.drafter, encoded, gamma=policy, **common)
        else:
            out = autoregressive_generate(self.engine, encoded, **common)
        texts = [
            self.tokenizer.decode(t, skip_special_tokens=True) if self.tokenizer else "" for t in out.tokens
        ]
        return GenerationResult(texts, out.tokens, out.finish_reasons, out.from_draft, out.stats)
