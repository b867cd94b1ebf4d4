"""The target's own first layers as the small model, on the target's own cache (BiLD §4.4).

Unlike :class:`~specdec.drafters.derived.TruncatedDrafter`, which keeps a separate cache for its
copy, the early exit writes its layers' keys and values into the target's cache. Before
verification those slots are released again, and the target's pass over the same tokens fills
*every* layer with real values, so no layer ever attends to approximated states (CALM-style
propagation of the exit's hidden state is what BiLD avoids) and the small model needs no cache or
catch-up of its own. Train the exit with ``specdec train early-exit`` so its predictions are usable.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import Draft, Drafter, Feedback
from specdec.drafters.small_model import draft_autoregressively
from specdec.engine import Engine, ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.models.surgery import check_truncation, truncated_copy
from specdec.sampling import Draws, Sampling


class EarlyExitDrafter(Drafter):
    has_confidence = True

    def __init__(self, target: PreTrainedModel, num_layers: int):
        check_truncation(target, num_layers)
        self.base, self.num_layers = target, num_layers
        self.name = f"early-exit-{num_layers}"
        self.engine: Engine | None = None

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        if target is not self.base:
            raise InvalidArgumentError("an early-exit drafter drafts with its own target's layers only")

    def attach(self, engine: Engine) -> None:
        if engine is self.engine:  # a pipeline re-attaching (``with_drafter``): the exit is built
            return
        self.engine = engine
        # Sliced from the engine's model so it shares the engine's (possibly packed) weights.
        self.exit_model = truncated_copy(engine.model, self.num_layers)

    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        if self.engine is None:
            raise InvalidArgumentError("attach the target's engine first (Pipeline does this)")
        self.draft_calls = 0
        self.pending = torch.tensor([p[-1] for p in prompts], dtype=torch.long)

    @torch.inference_mode()
    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        if gamma == 0:
            return Draft.empty(len(self.pending))

        def step(tokens: torch.Tensor) -> torch.Tensor:
            return self.engine.extend(tokens[:, None], model=self.exit_model).logits[:, -1]

        run = draft_autoregressively(step(self.pending), step, gamma, sampling, draws, min_confidence)
        # Release the exit's slots: verification re-runs these tokens through every layer.
        self.engine.rollback(run.draft.gamma + int(run.fed_all))
        self.draft_calls += run.forwards
        return run.draft

    def update(self, feedback: Feedback) -> None:
        self.pending = feedback.next_token

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        self.pending = torch.cat([self.pending, torch.tensor([p[-1] for p in prompts], dtype=torch.long)])

    def select_rows(self, rows: torch.Tensor) -> None:
        self.pending = self.pending[rows]
