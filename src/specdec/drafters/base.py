"""The drafter strategy interface: one small class per way of guessing the target's next tokens.

Verification lives in the decoders; a drafter only proposes tokens (with the distribution p they
were drawn from) and is told afterwards what the target settled, so it can bring its own state in
step. What the target computed on the way (logits, and the hidden states of the layers a drafter
asks for) comes with it: Tandem's secondary reads the primary's hidden states, BiTA its own logits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.engine import Engine, ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.sampling import Draws, Sampling


@dataclass
class BlockExtra:
    """Positions a drafter adds to the verify block for itself, never kept in the target's cache: tokens
    given by their input embeddings (BiTA's mask tokens), whose outputs reach the drafter in the
    feedback. They sit after the draft in the block; ``sees`` says which block positions each one
    attends to (itself included), so their position ids follow from it as for tree nodes."""

    embeds: torch.Tensor  # [B, E, d]
    sees: torch.Tensor  # [E, 1 + N + E] bool over [pending token, draft nodes, extra positions]
    sees_reserved: bool = True  # whether they see the target engine's reserved slots


@dataclass
class Draft:
    """Draft tokens for each row: a chain (γ tokens after the pending one), or a tree (``parents``)."""

    tokens: torch.Tensor  # [B, γ] long; positions past a row's length are padding
    probs: torch.Tensor | None = None  # [B, γ, V] p, the distributions tokens were drawn from; None = one-hot
    lengths: torch.Tensor | None = None  # [B] tokens really proposed per row; None = all γ
    # A tree: node i's parent node, −1 for the pending token; every row proposes all nodes. None: a chain.
    parents: tuple[int, ...] | None = None
    extra: BlockExtra | None = None
    # A tree's deepest node each row may keep ([B]: its usable draft length, a request's draft cap or
    # budget); None: any. A chain is cut to its rows' lengths instead.
    depth_caps: torch.Tensor | None = None
    # A tree whose first nodes are its drafter's chain (node i the child of node i − 1) and whose other
    # nodes are leaves beside chain nodes (a top-k tree): a step may verify the chain alone (:meth:`chain`)
    # and still learn what the siblings would have brought (:meth:`sibling_tokens`).
    chain_first: bool = False

    @property
    def gamma(self) -> int:
        return self.tokens.shape[1]

    @property
    def chain_depth(self) -> int:
        """How many nodes of a chain-first tree make its chain."""
        parents = self.parents or ()
        return next((i for i, p in enumerate(parents) if p != i - 1), len(parents))

    def chain(self) -> Draft:
        """A chain-first tree's chain alone, as a chain draft (its siblings dropped)."""
        depth = self.chain_depth
        probs = None if self.probs is None else self.probs[:, :depth]
        return Draft(self.tokens[:, :depth], probs)

    def sibling_tokens(self, depth: int) -> torch.Tensor:
        """``[B, k]``: a chain-first tree's leaves beside its chain node ``depth`` (0-based), the
        alternatives to that node (k may be 0)."""
        parents = self.parents or ()
        parent = depth - 1
        nodes = [i for i in range(self.chain_depth, len(parents)) if parents[i] == parent]
        return self.tokens[:, nodes]

    def row_lengths(self) -> torch.Tensor:
        if self.lengths is None:
            return torch.full((self.tokens.shape[0],), self.gamma, dtype=torch.long)
        return self.lengths

    @staticmethod
    def empty(batch: int) -> Draft:
        """No guess for any row: the step is a plain target step."""
        return Draft(torch.zeros(batch, 0, dtype=torch.long))


@dataclass
class Feedback:
    """What one target pass settled, for the drafter to catch up with.

    Each row kept its first ``num_accepted`` draft tokens (of a tree: the nodes ``path``), then the
    target emitted ``next_token`` (resampled, bonus, or BiLD's correction), which the target has not
    fed yet: the next step feeds it. ``target`` is that pass over the block [pending token, draft
    tokens, the drafter's extra positions]: logits ``[B, width, V]`` and the hidden states of
    :attr:`Drafter.target_hidden_layers`; positions past a row's draft length are padding, positions
    past ``num_accepted`` + 1 were rejected.
    """

    num_accepted: torch.Tensor  # [B] long
    next_token: torch.Tensor  # [B] long
    target: ExtendOutput
    path: torch.Tensor | None = None  # tree drafts: [B, depth] the kept nodes in order (see TreeVerification)


class Drafter(ABC):
    """Proposes γ tokens per row; keeps whatever state it needs in step with the target."""

    #: forwards of a draft model since :meth:`begin` (model-free drafters leave it at 0)
    draft_calls: int = 0
    #: whether :meth:`propose` honours ``min_confidence`` (its guesses come with a distribution)
    has_confidence: bool = False
    #: layers of the target whose hidden states (0 = embeddings) the drafter wants from every target
    #: pass, the prefill included; they cost nothing extra, the pass computes them anyway
    target_hidden_layers: tuple[int, ...] = ()
    #: slots the target engine reserves at the front of its cache for states only this drafter's
    #: extra positions see (BiTA's prompt keys/values), written by the drafter in :meth:`begin`
    reserved_slots: int = 0
    #: whether its drafts are trees (``Draft.parents``), which only tree-aware rules (SpS) verify
    proposes_trees: bool = False
    #: drafters that shape their own block (BiTA): the positions after the pending token a full block
    #: of theirs needs, which the γ policy gives way to (0: γ comes from the policy)
    block_positions: int = 0
    #: whether its blocks carry positions given by their embeddings (:class:`BlockExtra`): a compiled
    #: target engine compiles a graph for those too
    gives_embeddings: bool = False

    @property
    def context_size(self) -> int | None:
        """The longest sequence the drafter can read (None: no limit of its own). Near it, decoders
        shorten drafts, down to plain target steps, rather than stop early."""
        return None

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:  # noqa: B027
        """Raise if this drafter cannot draft for ``target`` (e.g. a different vocabulary)."""

    def attach(self, engine: Engine) -> None:  # noqa: B027
        """Receive the target's engine; drafters that run on the target's own cache keep it."""

    @abstractmethod
    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        """Start a batch. Every prompt's last token is pending (not yet seen by the target);
        ``prefill`` is the target's pass over the rest (None if every prompt is one token)."""

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        """Add rows for ``prompts`` after the running ones, as :meth:`begin` starts them: requests that
        arrive while others are generating (``prefill``: the target's pass over the newcomers, see
        :meth:`~specdec.engine.Engine.admit`). Called between steps, after :meth:`update`."""
        raise InvalidArgumentError(f"{type(self).__name__} cannot add requests to a running batch")

    @abstractmethod
    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        """Guess up to ``gamma`` tokens following each row's pending token.

        ``gamma`` may be 0 (a plain target step, e.g. at the edge of the context window): return an
        empty draft and run nothing. Sampled guesses take their randomness from ``draws`` at offset i
        for the i-th draft token (0-based), the same noise the target's own choice at that position
        uses, which is what makes coupled verification accept them.

        ``min_confidence`` is BiLD's fallback threshold α_FB: a row's draft stops *before* the first
        token whose draft probability max_y p(y) (temperature 1, untruncated) is below it, handing
        that position to the target; one threshold for every row, or float64 ``[B]``, one per row.
        Drafters whose guesses carry no confidence ignore it.
        """

    def next_source(self) -> str | None:
        """Which of its sources drafts the next step, for a drafter with several whose acceptance differs
        (prompt lookup and a model): each source gets its own γ policy, so one's α does not set the
        other's draft length. None: a single source."""
        return None

    @abstractmethod
    def update(self, feedback: Feedback) -> None:
        """The target settled this step (see :class:`Feedback`)."""

    @abstractmethod
    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only these batch positions (the others finished), in this order: new position i holds
        old position ``rows[i]``."""
