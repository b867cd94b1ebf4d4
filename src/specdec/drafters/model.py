"""An independent small causal LM as the drafter (the classic speculative sampling setup)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Feedback
from specdec.drafters.small_model import FIRST_GROWTH, DraftRun, SmallModelDrafter, drafting_copy
from specdec.engine import ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.models.vocabulary import check_same_vocabulary
from specdec.sampling import top_tokens


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
        top = top_tokens(logits.float(), width).cpu()
        drafted = chain.tokens[:, depth]
        columns.append(torch.stack([row[row != t][: width - 1] for row, t in zip(top, drafted, strict=True)]))
        parents += [depth - 1] * (width - 1)
    tokens = torch.cat(columns, dim=1)
    probs = None
    if chain.probs is not None:
        siblings = torch.nn.functional.one_hot(tokens[:, gamma:], chain.probs.shape[-1])
        probs = torch.cat([chain.probs, siblings.to(chain.probs.device, chain.probs.dtype)], dim=1)
    return Draft(tokens, probs, parents=tuple(parents), chain_first=True)


def chain_kept(nodes: list[int], chain: int) -> int:
    """How many of a kept path's first nodes are a chain-first tree's chain (node j at depth j, j <
    ``chain``); a kept sibling, a leaf, can only follow them."""
    return next((j for j, node in enumerate(nodes) if node != j or node >= chain), len(nodes))


class ModelDrafter(SmallModelDrafter):
    """Runs a small model autoregressively on its own engine, rolling it back after each verify.

    With ``tree_width`` k > 1 it proposes a top-k tree: its chain, and at each depth the k − 1 next
    most likely tokens as leaves (only the chain token has children, BiTA's efficient tree).
    With ``vocab`` (token ids) its output head computes only those rows and p is zero elsewhere
    (:mod:`specdec.models.draft_vocab`): a cheaper step, the same exact verification. With ``int8``
    its linears (the trimmed head included) run dynamically quantised: half a bf16 draft's weight
    bytes, which is what its first step after a target pass reads from memory again.
    """

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
        super().__init__(drafting_copy(model, vocab, int8), pack_weights=pack_weights, name=name)
        self.model = model
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.tree_width = tree_width
        self.proposes_trees = tree_width > 1

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        check_same_vocabulary(target, tokenizer, self.model, self.tokenizer)

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.draft_calls = 0
        self.engine.start(prompts, extra_slots=FIRST_GROWTH)
        # Tokens the target has settled on but this model has not run yet (the pending one, one
        # more after a fully accepted draft, and more after plain steps that drafted nothing).
        self.unseen: list[list[int]] = [[p[-1]] for p in prompts]
        self._last = self._tree_tokens = torch.zeros(len(prompts), 0, dtype=torch.long)
        self._fed: int | None = None  # draft tokens of the last proposal fed to the model; None: nothing ran

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.engine.admit(prompts)
        self.unseen += [[p[-1]] for p in prompts]
        self._admit_rows(len(prompts))
        pad = self._tree_tokens.new_zeros(len(prompts), self._tree_tokens.shape[1])
        self._tree_tokens = torch.cat([self._tree_tokens, pad])

    def catch_up(self) -> torch.Tensor:
        # Left-padded block of each row's unseen tokens: the same shape of work as a prefill.
        return self.engine.prefill(self.unseen).logits[:, -1]

    def proposal(self, run: DraftRun) -> Draft:
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
            m = chain_kept(nodes, chain)
            kept_chain.append(m)
            tails.append(nodes[m:])
        self.engine.rollback((fed - torch.tensor(kept_chain)).clamp(min=0))
        self.unseen = [
            [*self._last[row, fed:m].tolist(), *(self._tree_tokens[row, tails[row]].tolist()), t]
            for row, (m, t) in enumerate(zip(kept_chain, nxt, strict=True))
        ]

    def select_rows(self, rows: torch.Tensor) -> None:
        super().select_rows(rows)
        self.unseen = [self.unseen[i] for i in rows.tolist()]
        self._tree_tokens = self._tree_tokens[rows]
