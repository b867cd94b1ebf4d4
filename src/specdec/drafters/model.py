"""An independent small causal LM as the drafter (the classic speculative sampling setup)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter
from specdec.engine import Engine
from specdec.errors import VocabularyMismatchError
from specdec.sampling import SamplingConfig, greedy_tokens, logits_to_probs, max_probability, sample


def output_vocab_size(model: PreTrainedModel) -> int:
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "out_features", None):
        return head.out_features
    return model.config.get_text_config().vocab_size


def check_same_vocabulary(
    target: PreTrainedModel,
    target_tokenizer: PreTrainedTokenizerBase | None,
    draft: PreTrainedModel,
    draft_tokenizer: PreTrainedTokenizerBase | None,
) -> None:
    """Token ids mean the same thing on both sides, or verification would compare different words."""
    target_vocab, draft_vocab = output_vocab_size(target), output_vocab_size(draft)
    if target_vocab != draft_vocab:
        raise VocabularyMismatchError(
            f"target predicts {target_vocab} token ids but the draft predicts {draft_vocab}; "
            "a draft must use exactly the target's vocabulary"
        )
    both = target_tokenizer is not None and draft_tokenizer is not None
    if both and target_tokenizer.get_vocab() != draft_tokenizer.get_vocab():
        raise VocabularyMismatchError(
            "target and draft tokenizers map tokens to different ids "
            f"({len(target_tokenizer)} vs {len(draft_tokenizer)} entries); use a draft trained with the "
            "target's tokenizer"
        )


@dataclass
class DraftRun:
    draft: Draft
    fed_all: bool  # the last draft token also went through the model (drafting stopped on fallback)
    forwards: int  # model calls made, counting the one that produced ``first_logits``


def draft_autoregressively(
    first_logits: torch.Tensor,
    step: Callable[[torch.Tensor], torch.Tensor],
    gamma: int,
    sampling: SamplingConfig,
    generator: torch.Generator | None,
    min_confidence: float = 0.0,
) -> DraftRun:
    """Sample up to γ tokens, calling ``step(tokens) -> next logits`` between them.

    With ``min_confidence`` (BiLD's α_FB) a row stops before its first token whose max p is below
    it; once every row has stopped the target takes over (rows that stopped earlier wait for the
    batch). The last token is not fed unless drafting stopped that way: it is only needed once
    accepted.
    """
    logits, batch = first_logits, first_logits.shape[0]
    lengths = torch.full((batch,), gamma, dtype=torch.long)
    drafting = torch.ones(batch, dtype=torch.bool)
    tokens, probs, forwards = [], [], 1
    for i in range(gamma):
        if min_confidence > 0:
            unsure = drafting & (max_probability(logits).cpu() < min_confidence)
            lengths[unsure] = i
            drafting &= ~unsure
            if not drafting.any():
                break
        if sampling.greedy:
            token = greedy_tokens(logits)
        else:
            p = logits_to_probs(logits, sampling)
            token = sample(p, generator)
            probs.append(p)
        tokens.append(token)
        if i < gamma - 1:
            logits = step(token)
            forwards += 1
    draft = Draft(
        tokens=torch.stack(tokens, dim=1).cpu() if tokens else torch.zeros(batch, 0, dtype=torch.long),
        probs=torch.stack(probs, dim=1) if probs else None,
        lengths=lengths if min_confidence > 0 else None,
    )
    return DraftRun(draft, fed_all=len(tokens) < gamma, forwards=forwards)


class ModelDrafter(Drafter):
    """Runs a small model autoregressively on its own engine, rolling it back after each verify."""

    has_confidence = True

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        pack_weights: bool | None = None,
        name: str = "model",
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.engine = Engine(model, pack_weights=pack_weights)
        self.name = name

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        check_same_vocabulary(target, tokenizer, self.model, self.tokenizer)

    def begin(self, prompts: Sequence[Sequence[int]], capacity: int) -> None:
        self.draft_calls = 0
        self.engine.reset(len(prompts), capacity)
        if any(len(p) > 1 for p in prompts):
            self.engine.prefill([p[:-1] for p in prompts])
        # Tokens the target has settled on but this model has not run yet (1, or 2 after a full accept).
        self.unseen: list[list[int]] = [[p[-1]] for p in prompts]

    @torch.inference_mode()
    def propose(
        self,
        gamma: int,
        sampling: SamplingConfig,
        generator: torch.Generator | None,
        *,
        min_confidence: float = 0.0,
    ) -> Draft:
        # Left-padded block of each row's unseen tokens: the same shape of work as a prefill.
        logits = self.engine.prefill(self.unseen).logits[:, -1]
        run = draft_autoregressively(
            logits,
            lambda token: self.engine.extend(token[:, None]).logits[:, -1],
            gamma,
            sampling,
            generator,
            min_confidence,
        )
        self.draft_calls += run.forwards
        self._last, self._fed_all = run.draft.tokens, run.fed_all
        return run.draft

    def update(self, num_accepted: torch.Tensor, next_tokens: torch.Tensor) -> None:
        width = self._last.shape[1]
        # The engine holds the unseen tokens plus d_1..d_{width-1} (d_width too if ``_fed_all``).
        fed = width if self._fed_all else width - 1
        self.engine.rollback((fed - num_accepted).clamp(min=0))
        self.unseen = [
            ([int(self._last[row, -1])] if n == width > fed else []) + [int(t)]
            for row, (n, t) in enumerate(zip(num_accepted.tolist(), next_tokens.tolist(), strict=True))
        ]

    def select_rows(self, rows: torch.Tensor) -> None:
        self.engine.select_rows(rows)
        self.unseen = [self.unseen[i] for i in rows.tolist()]
