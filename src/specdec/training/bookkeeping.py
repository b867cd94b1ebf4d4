"""The bookkeeping the Tandem, EAGLE-3 and BiTA trainers share around their steps.

Each trainer owns its model, batches and losses; what a run leaves on disk is the same for all three, and
kept in one place so they agree on it: ``train_config.json`` written once, a ``log.jsonl`` line a step,
``best/`` chosen by a held-out score, ``checkpoint-K`` folders every ``save_every`` steps, and a time
limit that ends the run on a checkpoint (a lent GPU's deadline, a CI slot) instead of a kill, so that
``resume`` continues it exactly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm

from specdec.errors import InvalidArgumentError
from specdec.training.checkpoints import load_trainer_state, save_trainer_state, warmup_cosine


def check_time_limit(seconds: float | None) -> None:
    """A run's time limit: None (none) or a positive number of seconds."""
    if seconds is not None and not seconds > 0:
        raise InvalidArgumentError(f"time_limit_s must be > 0 seconds, got {seconds}")


class RunBook:
    """One run's folder and resume state: ``step`` (done), ``best`` (the best scores and their step) and
    ``tokens_seen``, saved with ``save_weights`` (the trainer's own format) beside each checkpoint.

    ``score`` reads a record's held-out score (higher is better); a record that beats ``best`` becomes it
    and is saved as ``best/``."""

    def __init__(
        self,
        output: Path,
        accelerator: Accelerator,
        save_weights: Callable[[Path], None],
        optimizer,
        scheduler,
        *,
        score: Callable[[dict], float],
        time_limit_s: float | None = None,
    ):
        self.output, self.accelerator, self.save_weights = output, accelerator, save_weights
        self.optimizer, self.scheduler, self.score = optimizer, scheduler, score
        self.time_limit_s = time_limit_s  # stop after the step that crosses it, on a checkpoint
        self.step, self.best, self.tokens_seen = 0, None, 0
        self.started = time.perf_counter()

    @classmethod
    def open(
        cls,
        output: Path,
        accelerator: Accelerator,
        config,
        parameters,
        save_weights,
        *,
        score,
        checkpoint,
        **adamw,
    ) -> RunBook:
        """A run's book with its AdamW optimiser over ``parameters`` (``config.lr``, ``adamw`` options) and
        warm-up + cosine schedule (``config.warmup_steps`` of ``config.steps``), stopping at
        ``config.time_limit_s``; resumed from ``checkpoint`` unless it is None."""
        optimizer = torch.optim.AdamW(parameters, lr=config.lr, **adamw)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, warmup_cosine(config.warmup_steps, config.steps)
        )
        book = cls(
            output,
            accelerator,
            save_weights,
            optimizer,
            scheduler,
            score=score,
            time_limit_s=config.time_limit_s,
        )
        if checkpoint is not None:
            book.resume(checkpoint)
        return book

    def resume(self, checkpoint: Path) -> None:
        """Continue from ``checkpoint``: its optimizer and schedule, step, best and tokens seen."""
        state = load_trainer_state(checkpoint, self.optimizer, self.scheduler)
        self.step, self.best, self.tokens_seen = state

    def write_config(self, config) -> None:
        """``train_config.json``: the first start's settings (a run resumed, ``config.resume``, keeps the file
        it has)."""
        path = self.output / "train_config.json"
        if self.accelerator.is_main_process and not (config.resume and path.is_file()):
            path.write_text(json.dumps(asdict(config), indent=1))

    def elapsed(self) -> float:
        """Seconds since this start (not the run's: a resumed run's log restarts its clock)."""
        return round(time.perf_counter() - self.started, 1)

    def save(self, folder: Path, step: int) -> None:
        """The weights and the resume state at ``step``, written by the main process."""
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            self.save_weights(folder)
            save_trainer_state(folder, step, self.best, self.tokens_seen, self.optimizer, self.scheduler)

    def scored(self, record: dict) -> None:
        """``record`` carries held-out scores: better than the best so far, it becomes ``best/``."""
        if self.best is None or self.score(record) > self.score(self.best):
            self.best = {"step": record["step"]} | {
                k: v for k, v in record.items() if k.startswith(("heldout", "accepted"))
            }
            self.save(self.output / "best", record["step"])
        record["best_step"] = self.best["step"]

    def log(self, record: dict) -> None:
        """Append ``record`` to ``log.jsonl``."""
        if self.accelerator.is_main_process:
            with (self.output / "log.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")

    def end_step(self, done: int, last: bool, save_every: int) -> bool:
        """After step ``done``: a checkpoint where one is due, or the time limit is reached (then the run
        stops on it: returns True)."""
        limit = self.time_limit_s
        out_of_time = limit is not None and time.perf_counter() - self.started >= limit
        if done % save_every == 0 or last or out_of_time:
            self.save(self.output / f"checkpoint-{done}", done)
        if out_of_time and not last:
            tqdm.write(f"time limit reached after step {done}; rerun with --resume to continue")
            return True
        return False
