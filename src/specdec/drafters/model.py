"""An independent small causal LM as the drafter (the classic speculative sampling setup)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.engine import Engine, ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.models.draft_vocab import trim_output_head
from specdec.models.surgery import reduced_precision_copy
from specdec.models.vocabulary import check_same_vocabulary
from specdec.sampling import (
    Draws,
    SamplingConfig,
    greedy_tokens,
    gumbel_argmax,
    logits_to_probs,
    max_probability,
)

# Slots a draft engine reserves beyond the prompt at first; it grows as the text does.
_FIRST_GROWTH = 128


@dataclass
class DraftRun:
    draft: Draft
    fed_all: bool  # the last draft token also went through the model (drafting stopped on fallback)
    forwards: int  # model calls made, counting the one that produced ``first_logits``
    logits: list[torch.Tensor]  # the draft model's logits [B, V] at each drafted position


def with_siblings(run: DraftRun, width: int) -> Draft:
    """The chain plus, at each depth, the draft's next ``width − 1`` most likely tokens as leaves
    beside the chain token (a top-k tree at the cost of the chain: the logits exist already).

    Siblings are deterministic (one-hot p), the chain keeps its own p, so recursive rejection
    sampling stays exact: a one-hot candidate tried after a rejection keeps the residual's law
    whichever token it is.
    """
    chain = run.draft
    gamma = chain.gamma
    parents, columns = list(range(-1, gamma - 1)), [chain.tokens]
    for depth, logits in enumerate(run.logits[:gamma]):
        top = logits.float().topk(width, dim=-1).indices.cpu()
        drafted = chain.tokens[:, depth]
        columns.append(torch.stack([row[row != t][: width - 1] for row, t in zip(top, drafted, strict=True)]))
        parents += [depth - 1] * (width - 1)
    tokens = torch.cat(columns, dim=1)
    probs = None
    if chain.probs is not None:
        siblings = torch.nn.functional.one_hot(tokens[:, gamma:], chain.probs.shape[-1])
        probs = torch.cat([chain.probs, siblings.to(chain.probs.device, chain.probs.dtype)], dim=1)
    return Draft(tokens, probs, parents=tuple(parents))


def draft_autoregressively(
    first_logits: torch.Tensor,
    step: Callable[[torch.Tensor], torch.Tensor],
    gamma: int,
    sampling: SamplingConfig,
    draws: Draws,
    min_confidence: float = 0.0,
    stop: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> DraftRun:
    """Sample up to γ tokens, calling ``step(tokens) -> next logits`` between them.

    The i-th token is drawn with the draws at offset i: the noise the target's own choice at that
    position uses, so a draft that agrees with the target draws the same token.

    With ``min_confidence`` (BiLD's α_FB) a row stops before its first token whose max p is below
    it, and with ``stop`` (``logits [B, V] -> [B] bool``, e.g. Tandem's router) before its first token
    that says True; once every row has stopped the target takes over (rows that stopped earlier wait
    for the batch). The last token is not fed unless drafting stopped that way: it is only needed once
    accepted.
    """
    logits, batch = first_logits, first_logits.shape[0]
    lengths = torch.full((batch,), gamma, dtype=torch.long)
    drafting = torch.ones(batch, dtype=torch.bool)
    tokens, probs, seen, forwards = [], [], [], 1
    for i in range(gamma):
        if min_confidence > 0 or stop is not None:
            unsure = torch.zeros(batch, dtype=torch.bool)
            if min_confidence > 0:
                unsure |= max_probability(logits).cpu() < min_confidence
            if stop is not None:
                unsure |= stop(logits).cpu()
            unsure &= drafting
            lengths[unsure] = i
            drafting &= ~unsure
            if not drafting.any():
                break
        if sampling.greedy:
            token = greedy_tokens(logits)
        else:
            p = logits_to_probs(logits, sampling)
            token = gumbel_argmax(p, draws.gumbel(i, p.shape[-1]).to(p.device))
            probs.append(p)
        tokens.append(token)
        seen.append(logits)
        if i < gamma - 1:
            logits = step(token)
            forwards += 1
    draft = Draft(
        tokens=torch.stack(tokens, dim=1).cpu() if tokens else torch.zeros(batch, 0, dtype=torch.long),
        probs=torch.stack(probs, dim=1) if probs else None,
        lengths=lengths if min_confidence > 0 or stop is not None else None,
    )
    return DraftRun(draft, fed_all=len(tokens) < gamma, forwards=forwards, logits=seen)


def drafting_copy(model: PreTrainedModel, vocab: torch.Tensor | None, int8: bool) -> PreTrainedModel:
    """What a small model drafts with: its output head cut to ``vocab`` (p = 0 elsewhere) and its
    linears dynamically quantised to int8 where asked; ``model`` itself when neither is (it stays
    untouched either way). A cheaper step changes how often drafts are accepted, never the output."""
    drafting = model if vocab is None else trim_output_head(model, vocab)
    if int8:
        if next(model.parameters()).device.type != "cpu":
            raise InvalidArgumentError(
                "int8 drafts run on CPU only (dynamic int8 linears); use bf16: on a GPU"
            )
        drafting = reduced_precision_copy(drafting, "int8")
    return drafting


class ModelDrafter(Drafter):
    """Runs a small model autoregressively on its own engine, rolling it back after each verify.

    With ``tree_width`` k > 1 it proposes a top-k tree: its chain, and at each depth the k − 1 next
    most likely tokens as leaves (only the chain token has children, BiTA's efficient tree).
    With ``vocab`` (token ids) its output head computes only those rows and p is zero elsewhere
    (:mod:`specdec.models.draft_vocab`): a cheaper step, the same exact verification. With ``int8``
    its linears (the trimmed head included) run dynamically quantised: half a bf16 draft's weight
    bytes, which is what its first step after a target pass reads from memory again.
    """

    has_confidence = True

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        pack_weights: bool | None = None,
        name: str = "model",
        tree_width: int = 1,
        vocab: torch.Tensor | None = None,
        int8: bool = False,
    ):
        if isinstance(tree_width, bool) or not isinstance(tree_width, int) or tree_width < 1:
            raise InvalidArgumentError(f"tree_width must be an integer >= 1, got {tree_width!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.engine = Engine(drafting_copy(model, vocab, int8), pack_weights=pack_weights)
        self.name = name
        self.tree_width = tree_width
        self.proposes_trees = tree_width > 1

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        check_same_vocabulary(target, tokenizer, self.model, self.tokenizer)

    @property
    def context_size(self) -> int | None:
        return self.engine.max_positions

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.draft_calls = 0
        self.engine.start(prompts, extra_slots=_FIRST_GROWTH)
        # Tokens the target has settled on but this model has not run yet (the pending one, one
        # more after a fully accepted draft, and more after plain steps that drafted nothing).
        self.unseen: list[list[int]] = [[p[-1]] for p in prompts]
        self._last = self._tree_tokens = torch.zeros(len(prompts), 0, dtype=torch.long)
        self._fed: int | None = None  # draft tokens of the last proposal fed to the model; None: nothing ran

    @torch.inference_mode()
    def propose(
        self,
        gamma: int,
        sampling: SamplingConfig,
        draws: Draws,
        *,
        min_confidence: float = 0.0,
    ) -> Draft:
        if gamma == 0:
            self._last, self._fed = torch.zeros(len(self.unseen), 0, dtype=torch.long), None
            self._tree_tokens = self._last
            return Draft.empty(len(self.unseen))
        # Left-padded block of each row's unseen tokens: the same shape of work as a prefill.
        logits = self.engine.prefill(self.unseen).logits[:, -1]
        run = draft_autoregressively(
            logits,
            lambda token: self.engine.extend(token[:, None]).logits[:, -1],
            gamma,
            sampling,
            draws,
            min_confidence,
        )
        self.draft_calls += run.forwards
        self._last = run.draft.tokens
        # The model ran every draft token but the last, unless drafting stopped early on fallback.
        self._fed = run.draft.gamma if run.fed_all else run.draft.gamma - 1
        draft = with_siblings(run, self.tree_width) if self.proposes_trees else run.draft
        self._tree_tokens = draft.tokens
        return draft

    def adopt(self, tokens: torch.Tensor) -> None:
        """This step's draft ``[B, γ]`` came from elsewhere (a combined drafter's other source) and this
        model ran nothing: what the target keeps of it is run at the next proposal, with the rest."""
        self._last = self._tree_tokens = tokens
        self._fed = None

    def update(self, feedback: Feedback) -> None:
        nxt = feedback.next_token.tolist()
        if self._fed is None:  # nothing ran: what was unseen still is, with what this step settled
            kept = feedback.num_accepted.tolist()
            self.unseen = [
                [*u, *self._last[row, :n].tolist(), t]
                for row, (u, n, t) in enumerate(zip(self.unseen, kept, nxt, strict=True))
            ]
            return
        fed, chain = self._fed, self._last.shape[1]
        kept_chain, tails = [], []  # per row: chain tokens kept, then a kept sibling (a leaf) if any
        for row, n in enumerate(feedback.num_accepted.tolist()):
            nodes = list(range(n)) if feedback.path is None else feedback.path[row, :n].tolist()
            m = next((j for j, node in enumerate(nodes) if node != j or node >= chain), len(nodes))
            kept_chain.append(m)
            tails.append(nodes[m:])
        self.engine.rollback((fed - torch.tensor(kept_chain)).clamp(min=0))
        self.unseen = [
            [*self._last[row, fed:m].tolist(), *(self._tree_tokens[row, tails[row]].tolist()), t]
            for row, (m, t) in enumerate(zip(kept_chain, nxt, strict=True))
        ]

    def select_rows(self, rows: torch.Tensor) -> None:
        self.engine.select_rows(rows)
        self.unseen = [self.unseen[i] for i in rows.tolist()]
        self._last = self._last[rows]
        self._tree_tokens = self._tree_tokens[rows]
