"""What every trainer keeps beside a checkpoint's weights, and the schedule and freezing they share.

Checkpoints are ``checkpoint-K`` folders (the weights as the model saves them, plus the trainer state
below), so an interrupted run resumes from its last one and reproduces the uninterrupted run."""

from __future__ import annotations

import math
from pathlib import Path

import torch
from transformers import PreTrainedModel

# Each checkpoint's resume state, written by save_trainer_state (train_draft's checkpoints from before
# 2026-11-25 hold only step, optimiser and schedule: load_trainer_state reads them too).
TRAINER_STATE_FILE = "trainer_state.pt"


def checkpoints_in(output: Path) -> list[Path]:
    """A run's ``checkpoint-K`` folders, oldest first."""
    return sorted(output.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))


def save_trainer_state(
    folder: Path, step: int, best: dict | None, tokens_seen: int, optimizer, scheduler
) -> None:
    """What ``resume`` needs beside the weights: step, best so far, tokens seen, optimizer and schedule."""
    state = {
        "step": step,
        "best": best,
        "tokens_seen": tokens_seen,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
    }
    torch.save(state, folder / TRAINER_STATE_FILE)


def load_trainer_state(checkpoint: Path, optimizer, scheduler) -> tuple[int, dict | None, int]:
    """Restore optimizer and schedule from ``checkpoint``; returns (step, best, tokens seen)."""
    state = torch.load(checkpoint / TRAINER_STATE_FILE, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return state["step"], state.get("best"), state.get("tokens_seen", 0)


def freeze_vocabulary(model: PreTrainedModel) -> None:
    """Keep the input embeddings and the output head as they are (the target's shared vocabulary)."""
    model.get_input_embeddings().weight.requires_grad_(False)
    head = model.get_output_embeddings()
    if head is not None:
        head.weight.requires_grad_(False)


def warmup_cosine(warmup_steps: int, steps: int):
    """LR multiplier per step: linear warm-up, then cosine decay to 10 %."""

    def schedule(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, steps - warmup_steps)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return schedule
