"""How well a draft predicts a target: teacher-forced agreement and α, and measured SpS gains."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.decoders import SpeculativeSampling
from specdec.drafters import ModelDrafter
from specdec.pipeline import Pipeline
from specdec.training.trainer import evaluate


def evaluate_draft(
    target: PreTrainedModel,
    draft: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    *,
    heldout_windows: torch.Tensor | None,
    prompts: Sequence[str] = (),
    max_new_tokens: int = 64,
    gamma: int = 4,
) -> dict:
    """Metrics for any draft against any target sharing its vocabulary.

    - ``text``: on held-out text windows, top-1 agreement and α = Σ min(p, q) (= 1 − TV(p, q)),
      teacher-forced (both models see the same true prefix).
    - ``prompts``: greedy speculative decoding with fixed γ on chat prompts: measured α, tokens
      per target call, and the same teacher-forced metrics on the target's own answers
      (the distribution drafting actually meets).
    """
    report: dict = {}
    if heldout_windows is not None:
        report["text"] = evaluate(draft, target, heldout_windows)
    if prompts:
        pipe = Pipeline(target, tokenizer, drafter=ModelDrafter(draft, tokenizer))
        accepted = proposed = new = steps = 0
        answers = []
        for prompt in prompts:
            out = pipe.generate(
                prompt, method=SpeculativeSampling(gamma), max_new_tokens=max_new_tokens, chat=True
            )
            s = out.stats
            accepted, proposed = accepted + s.accepted_tokens, proposed + s.proposed_tokens
            new, steps = new + s.new_tokens, steps + s.row_steps
            answers.append(pipe.encode(prompt, chat=True) + out.token_ids[0])
        on_policy = [evaluate(draft, target, torch.tensor([ids])) for ids in answers if len(ids) > 1]
        report["prompts"] = {
            "count": len(prompts),
            "gamma": gamma,
            "alpha_measured": accepted / proposed if proposed else 0.0,
            "tokens_per_target_call": new / steps if steps else 0.0,
            "top1_agreement_on_target_answers": sum(r["top1_agreement"] for r in on_policy) / len(on_policy),
            "alpha_on_target_answers": sum(r["alpha"] for r in on_policy) / len(on_policy),
        }
    return report
