"""An EAGLE-3 head drafting for its target (``eagle3:PATH``), on the target's hidden-state channel.

The target's verify pass computes the hidden states the head reads (``target_hidden_layers``: its
three auxiliary layers) for every token it scores; they arrive with the feedback at no extra cost.
Each settled token x_{i+1} enters the head's cache paired with the fused target feature at position
i; the pending token's pair (the feature before it) gives the first guess, and each further guess
pairs the last guess with the head's own output feature, as in training's unrolled passes. Drafted
pairs leave the cache at the next update: the target's features of the kept tokens replace them.

The head's cache is ragged (each row holds as many pairs as it has settled tokens, positions are
columns), so rows join, leave and roll back independently; one layer makes it cheap to keep.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.drafters.model import with_siblings
from specdec.drafters.ragged_cache import RaggedCache, catch_up_groups
from specdec.drafters.small_model import draft_autoregressively
from specdec.drafters.tree_search import grow_tree
from specdec.engine import ExtendOutput
from specdec.engine.kernels import pack_linear_layers, packing_supported
from specdec.errors import InvalidArgumentError
from specdec.models.eagle3 import Eagle3Head
from specdec.models.vocabulary import output_vocab_size
from specdec.sampling import Draws, Sampling

# Candidates a dynamic tree keeps per depth and children each of them offers (EAGLE-2's top-k): the
# head runs on a block of this many nodes per depth, which on one row costs about one node
DYNAMIC_BEAM = 4


class Eagle3Drafter(Drafter):
    """Drafts with ``head`` for the target whose input ``embeddings`` it shares: its chain, or with
    ``tree_width`` k > 1 a top-k tree (the chain and, at each depth, the next k − 1 likeliest tokens),
    or with ``dynamic`` a tree of k nodes per draft position placed where the head is confident
    (:mod:`~specdec.drafters.tree_search`: a beam of ``beam`` candidates per depth)."""

    has_confidence = True

    def __init__(
        self,
        head: Eagle3Head,
        embeddings: torch.Tensor,
        *,
        tree_width: int = 1,
        dynamic: bool = False,
        beam: int = DYNAMIC_BEAM,
        name: str = "eagle3",
    ):
        for value, what in ((tree_width, "tree_width"), (beam, "beam")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{what} must be an integer >= 1, got {value!r}")
        if dynamic and tree_width < 2:
            raise InvalidArgumentError(f"a dynamic tree needs tree_width >= 2, got {tree_width!r}")
        # oneDNN-prepacked linears where this CPU has them: at one row per step an unpacked GEMM repacks
        # its weight on every call and costs most of the head's time
        # on the target's device: its features and embeddings are read at every call
        self.device = embeddings.device
        head = head.to(self.device).eval()
        self.head = pack_linear_layers(head) if packing_supported(head) else head
        self.embeddings, self.name = embeddings.detach(), name
        self.tree_width, self.proposes_trees = tree_width, tree_width > 1
        self.dynamic, self.beam = dynamic, beam
        self.target_hidden_layers = head.aux_layers
        attention = head.layers[0].self_attn
        self._shape = (attention.kv_heads, attention.head_dim, head.dtype)

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        text, head = target.config.get_text_config(), self.head
        if (text.hidden_size, output_vocab_size(target)) != (head.target_hidden_size, head.config.vocab_size):
            raise InvalidArgumentError(
                f"the EAGLE-3 head was trained for a target of width {head.target_hidden_size} and "
                f"{head.config.vocab_size} tokens; this one has {text.hidden_size} and "
                f"{output_vocab_size(target)}"
            )
        if max(head.aux_layers) > text.num_hidden_layers:
            raise InvalidArgumentError(
                f"the head reads target layers {list(head.aux_layers)}; the target has "
                f"{text.num_hidden_layers}"
            )

    @torch.inference_mode()
    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.draft_calls = 0
        self.cache = RaggedCache(0, *self._shape, self.device)
        self.queue: list[list[tuple[torch.Tensor, int]]] = []
        self._fed = torch.zeros(0, dtype=torch.long)
        self._last_tokens = torch.zeros(0, 0, dtype=torch.long)
        # per row, the head's logits and output feature after its last cached pair: the first guess
        vocab, hidden = self.head.lm_head.out_features, self.head.config.hidden_size
        self._tail_logits = torch.zeros(0, vocab, dtype=self._shape[2], device=self.device)
        self._tail_feature = torch.zeros(0, hidden, dtype=self._shape[2], device=self.device)
        self.admit(prompts, prefill)

    @torch.inference_mode()
    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        """Each prompt's pairs (feature at i, token i + 1), up to its pending last token, enter the head's
        cache now, with the prefill.

        Caught up at the first proposal instead, a long prompt's pass was timed as drafting: on a
        700-token RAG prompt one draft position looked as costly as a target step, the γ policy
        switched the head off after its first draft and no probe could pay for itself again (the
        2026-11-26 results page: one head call in 128 steps on every RAG and summary prompt)."""
        self.cache.add_rows(len(prompts))
        self._fed = torch.cat([self._fed, torch.zeros(len(prompts), dtype=torch.long)])
        pad = self._last_tokens.new_zeros(len(prompts), self._last_tokens.shape[1])
        self._last_tokens = torch.cat([self._last_tokens, pad])
        tails = self._tail_logits, self._tail_feature
        self._tail_logits, self._tail_feature = (
            torch.cat([t, t.new_zeros(len(prompts), t.shape[1])]) for t in tails
        )
        features = None if prefill is None else self.head.fuse(prefill.hidden_states)
        for row, prompt in enumerate(prompts):
            n = len(prompt) - 1  # prefilled tokens, left-padded in the prefill's output
            own = [] if n == 0 else features[row, features.shape[1] - n :]
            self.queue.append([(own[i], int(prompt[i + 1])) for i in range(n)])
        self._catch_up()

    def _run(
        self,
        embeds_tokens: torch.Tensor,
        features: torch.Tensor,
        counts: torch.Tensor,
        cache: RaggedCache,
        tree: tuple[torch.Tensor, torch.Tensor] | None = None,
        last: torch.Tensor | None = None,
    ):
        """One head pass over a right-padded block of pairs per row, written into ``cache``: a causal
        block, or the nodes of one tree depth (``tree``: their positions ``[B, k]`` and mask); logits
        only at each row's pair ``last[b]`` where given."""
        width = embeds_tokens.shape[1]
        if tree is None:
            positions = cache.lengths[:, None] + torch.arange(width)[None]
            mask = cache.block_mask(counts, width)
        else:
            positions, mask = tree
        embeds = F.embedding(embeds_tokens.to(self.device), self.embeddings)
        positions, mask = positions.to(self.device), None if mask is None else mask.to(self.device)
        out = self.head(embeds, features, positions, mask, cache.past(), last)
        cache.write(out.keys, out.values, counts)
        self.draft_calls += 1
        return out

    def _catch_up(self) -> None:
        """The queued pairs into the cache, and each row's tail (logits and feature after its last pair)
        brought up to date; rows with nothing queued keep theirs and cost no call."""
        counts = torch.tensor([len(q) for q in self.queue], dtype=torch.long)
        waiting = counts.nonzero().flatten()
        for band in catch_up_groups(counts[waiting]) if len(waiting) else []:
            rows = waiting[band]
            queued = counts[rows]
            tokens, features = self._queued(rows.tolist(), int(queued.max()))
            whole = len(rows) == len(self.queue)
            cache = self.cache if whole else self.cache.take(rows)
            last = queued - 1
            out = self._run(tokens, features, queued, cache, last=last)
            if not whole:
                self.cache.put(rows, cache)
            on = rows.to(self.device)
            self._tail_logits[on] = out.logits[:, 0].to(self._tail_logits.dtype)
            at = torch.arange(len(rows), device=self.device), last.to(self.device)
            self._tail_feature[on] = out.prenorm[at].to(self._tail_feature.dtype)
        self.queue = [[] for _ in self.queue]

    def _queued(self, rows: list[int], width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """These rows' queued (token, feature) pairs as right-padded ``[len(rows), width]`` blocks."""
        tokens = torch.zeros(len(rows), width, dtype=torch.long)
        hidden = self.head.config.hidden_size
        features = torch.zeros(len(rows), width, hidden, dtype=self._shape[2], device=self.device)
        for i, row in enumerate(rows):
            if self.queue[row]:  # one copy per row, not per pair (each is a kernel launch on a GPU)
                queued, ids = zip(*self.queue[row], strict=True)
                tokens[i, : len(ids)] = torch.tensor(ids)
                features[i, : len(ids)] = torch.stack(queued)
        return tokens, features

    @torch.inference_mode()
    def propose(
        self, gamma: int, sampling: Sampling, draws: Draws, *, min_confidence: float | torch.Tensor = 0.0
    ) -> Draft:
        batch = len(self.queue)
        self._fed = torch.zeros(batch, dtype=torch.long)
        if gamma == 0:
            self._last_tokens = Draft.empty(batch).tokens
            return Draft.empty(batch)
        self._catch_up()
        if self.dynamic:
            return self._grow(gamma)
        able = self.cache.lengths > 0  # a one-token prompt has no pair before its first target step
        state = {"feature": self._tail_feature}

        def step(token: torch.Tensor) -> torch.Tensor:
            ones = torch.ones(batch, dtype=torch.long)
            out = self._run(token[:, None], state["feature"][:, None], ones, self.cache)
            self._fed += 1
            state["feature"] = out.prenorm[:, -1]
            return self.head.target_logits(out.logits[:, -1])

        run = draft_autoregressively(
            self.head.target_logits(self._tail_logits), step, gamma, sampling, draws, min_confidence
        )
        if self.proposes_trees:
            tree = with_siblings(run, self.tree_width)
            self._last_tokens = tree.tokens
            return tree
        self._last_tokens = run.draft.tokens
        lengths = torch.where(able, run.draft.row_lengths(), 0)  # rows with no pair yet guess nothing
        return Draft(run.draft.tokens, run.draft.probs, lengths)

    def _grow(self, gamma: int) -> Draft:
        """A dynamic tree of depth γ and ``tree_width`` · γ nodes; each depth's frontier runs through the
        head as one block whose nodes see the settled pairs and their own drafted ancestors."""
        batch, settled = len(self.queue), self.cache.lengths.clone()
        state: dict[str, torch.Tensor] = {}  # the last frontier's output features, ancestors and columns

        def expand(tokens: torch.Tensor, slots: list[int] | None) -> torch.Tensor:
            k, drafted = tokens.shape[1], int(self._fed[0]) if batch else 0
            ancestors = torch.zeros(k, drafted, dtype=torch.bool)
            if slots is None:  # the root's children: their pairs read the pending token's feature
                features = self._tail_feature[:, None].expand(-1, k, -1)
            else:
                index = torch.tensor(slots)
                features = state["features"][:, index.to(self.device)]
                ancestors[:, : state["ancestors"].shape[1]] = state["ancestors"][index]
                ancestors[torch.arange(k), state["columns"][index]] = True
            positions = settled[:, None] + ancestors.sum(1)[None]  # a node at depth d has d − 1 ancestors
            tree = positions, self.cache.tree_mask(settled, ancestors)
            out = self._run(tokens, features, torch.full((batch,), k), self.cache, tree)
            self._fed += k
            state.update(features=out.prenorm, ancestors=ancestors, columns=drafted + torch.arange(k))
            return self.head.target_logits(out.logits)

        first = self.head.target_logits(self._tail_logits)
        grown = grow_tree(first, expand, gamma, self.tree_width * gamma, self.beam)
        self._last_tokens = grown.tokens.cpu()
        return Draft(self._last_tokens, None, parents=grown.parents)

    def adopt(self, tokens: torch.Tensor) -> None:
        """This step's draft ``[B, γ]`` came from elsewhere (a combined drafter's prompt lookup) and the
        head ran nothing: the pairs of what the target keeps of it join the queue at the update."""
        self._last_tokens = tokens
        self._fed = torch.zeros(len(self.queue), dtype=torch.long)

    @torch.inference_mode()
    def update(self, feedback: Feedback) -> None:
        self.cache.rollback(self._fed)  # drafted pairs leave; the target's features replace them
        self._fed = torch.zeros_like(self._fed)
        features = self.head.fuse(feedback.target.hidden_states)
        settled = zip(feedback.num_accepted.tolist(), feedback.next_token.tolist(), strict=True)
        for row, (accepted, nxt) in enumerate(settled):
            nodes = list(range(accepted)) if feedback.path is None else feedback.path[row, :accepted].tolist()
            tokens = [*self._last_tokens[row, nodes].tolist(), nxt]
            at = [0, *(1 + node for node in nodes)]  # block positions: the pending token, then kept nodes
            self.queue[row] += [(features[row, i], token) for i, token in zip(at, tokens, strict=True)]

    def select_rows(self, rows: torch.Tensor) -> None:
        self.cache.select_rows(rows)
        self.queue = [self.queue[i] for i in rows.tolist()]
        self._fed, self._last_tokens = self._fed[rows], self._last_tokens[rows]
        on = rows.to(self.device)
        self._tail_logits, self._tail_feature = self._tail_logits[on], self._tail_feature[on]
