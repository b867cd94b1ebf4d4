"""Tandem + SPEED (§3.1): the Tandem secondary drafts, reading the primary's states of everything settled.

The target's verify pass computes the hidden states the secondary reads (``target_hidden_layers``)
for every token it scores; they reach the drafter through :class:`~specdec.drafters.base.Feedback`
at no extra cost. Once the target settles tokens (the pending token and the accepted draft tokens),
their projected primary states replace the secondary's own states for them: the next draft step
writes them into the secondary's cache (as layer inputs, so each secondary layer computes their keys
and values itself) in the same forward that feeds the new pending token. The current block, from the
pending token on, uses the secondary's own states, exactly as in training.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Feedback
from specdec.drafters.small_model import FIRST_GROWTH, SmallModelDrafter, drafting_copy
from specdec.engine import ExtendOutput
from specdec.models.router import BlockRouter
from specdec.models.tandem import TandemModel
from specdec.models.vocabulary import check_same_vocabulary


class TandemDrafter(SmallModelDrafter):
    """Drafts with a :class:`~specdec.models.tandem.TandemModel` secondary for the primary it reads.

    With a ``router`` (adaptive block length, §3.1) a row stops drafting before the first token whose
    predicted disagreement with the primary exceeds ``tau``; the γ the decoder asks for is the cap.
    ``vocab`` and ``int8`` make its steps cheaper as for :class:`~specdec.drafters.model.ModelDrafter`
    (a trimmed output head, dynamic int8 linears); the projections stay as trained.
    """

    def __init__(
        self,
        tandem: TandemModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        pack_weights: bool | None = None,
        name: str = "tandem",
        router: BlockRouter | None = None,
        tau: float = 0.8,
        vocab: torch.Tensor | None = None,
        int8: bool = False,
    ):
        super().__init__(drafting_copy(tandem.secondary, vocab, int8), pack_weights=pack_weights, name=name)
        self.tandem, self.tokenizer = tandem.eval(), tokenizer
        self.router, self.tau = (router.eval() if router is not None else None), tau
        self.target_hidden_layers = tandem.primary_layers

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        self.tandem.check_primary(target)
        check_same_vocabulary(target, tokenizer, self.tandem.secondary, self.tokenizer)

    @torch.inference_mode()
    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.draft_calls = 0
        self.engine.reset(len(prompts), max(len(p) for p in prompts) + FIRST_GROWTH)
        if prefill is not None:  # the prompt but its last token, read from the primary's states
            given = self.tandem.project(prefill.hidden_states)
            self.engine.prefill([p[:-1] for p in prompts], layer_inputs=given)
        self.pending = torch.tensor([p[-1] for p in prompts], dtype=torch.long)
        # Settled tokens whose primary states are known but not yet in the secondary's cache.
        self.queue: list[list[tuple[int, list[torch.Tensor]]]] = [[] for _ in prompts]
        self._last = torch.zeros(len(prompts), 0, dtype=torch.long)
        self._fed: int | None = None  # draft tokens the secondary ran last step; None: it ran nothing

    @torch.inference_mode()
    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        given = None if prefill is None else self.tandem.project(prefill.hidden_states)
        self.engine.admit(prompts, layer_inputs=given)
        self.pending = torch.cat([self.pending, torch.tensor([p[-1] for p in prompts], dtype=torch.long)])
        self.queue += [[] for _ in prompts]
        self._admit_rows(len(prompts))

    def stop_rule(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        return self._router_stops if self.router is not None else None

    def _router_stops(self, logits: torch.Tensor) -> torch.Tensor:
        embeddings = self.tandem.secondary.get_input_embeddings()
        return torch.sigmoid(self.router(logits, embeddings)) > self.tau

    def catch_up(self) -> torch.Tensor:
        """One left-padded block per row: the queued settled tokens with their primary states as layer
        inputs, then the pending token with its own. Returns the logits after the pending token."""
        batch, layers = len(self.pending), len(self.tandem.layer_map)
        width = 1 + max(len(q) for q in self.queue)
        tokens = torch.zeros(batch, width, dtype=torch.long)
        token_mask = torch.zeros(batch, width, dtype=torch.bool)
        from_primary = torch.zeros(batch, width, dtype=torch.bool)
        size = self.engine.config.get_text_config().hidden_size
        given = {j: torch.zeros(batch, width, size, dtype=self.engine.model.dtype) for j in range(layers)}
        for row, queued in enumerate(self.queue):
            start = width - 1 - len(queued)
            for offset, (token, states) in enumerate(queued):
                tokens[row, start + offset] = token
                for j in range(layers):
                    given[j][row, start + offset] = states[j]
            token_mask[row, start:] = True
            from_primary[row, start : width - 1] = True
        tokens[:, -1] = self.pending
        self.queue = [[] for _ in self.queue]
        out = self.engine.extend(
            tokens, token_mask=token_mask, num_logits=1, layer_inputs=given, layer_input_mask=from_primary
        )
        return out.logits[:, -1]

    @torch.inference_mode()
    def update(self, feedback: Feedback) -> None:
        if self._fed is not None:  # the pending token and the drafts it ran leave with their own states
            self.engine.rollback(1 + self._fed)
        projected = self.tandem.project(feedback.target.hidden_states)
        settled = zip(feedback.num_accepted.tolist(), feedback.next_token.tolist(), strict=True)
        for row, (accepted, nxt) in enumerate(settled):
            tokens = [int(self.pending[row]), *self._last[row, :accepted].tolist()]
            for i, token in enumerate(tokens):
                self.queue[row].append((token, [projected[j][row, i] for j in range(len(projected))]))
            self.pending[row] = nxt

    def select_rows(self, rows: torch.Tensor) -> None:
        super().select_rows(rows)
        self.queue = [self.queue[i] for i in rows.tolist()]
        self.pending = self.pending[rows]
