"""Train a BiTA adapter (§3.1, eq. 1): the SAR loss on the target's own answers, the model frozen
(the packed training pass and the acceptance walk are in :mod:`specdec.training.sar`).

Selection is by what decoding gets: on held-out answers, the tokens a straightforward chain, the
efficient tree (top 5/4/3, only top-1 nodes have children) and the tree decoding will run
(``select_widths``: the efficient one unless told, e.g. ``(2,)`` where a CPU runs the top 2 of the
first mask) would accept per step from each group; ``best/`` is the checkpoint with the most for the
last. Batches and dropout depend only on (seed, step), so ``resume`` continues exactly where a run
stopped — also one stopped by its time limit, which ends a budgeted session (a lent GPU, a CI slot)
on a checkpoint instead of a kill.
Under ``accelerate launch`` each process trains on its rows of that batch (see distributed.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from specdec.errors import InvalidArgumentError
from specdec.inputs import check_count
from specdec.models.bita import BiTAAdapter
from specdec.training.answers import TargetAnswer
from specdec.training.bookkeeping import RunBook, check_time_limit
from specdec.training.checkpoints import checkpoints_in
from specdec.training.distributed import batch_mean, batch_share, optimiser_step, rank_rows, sync_weights
from specdec.training.sar import EFFICIENT, IGNORE, accepted_per_step, sar_batch, sar_logits, sar_loss


@dataclass
class BiTATrainConfig:
    output_dir: str
    steps: int = 1000
    batch_size: int = 8  # sequences per step
    groups: int = 32  # mask groups packed per sequence (official: up to 64)
    lr: float = 3e-2  # the official preset: 3e-2, cosine
    warmup_steps: int = 20
    grad_clip: float = 1.0
    max_len: int = 256
    heldout_fraction: float = 0.05
    eval_every: int = 100
    eval_sequences: int = 64
    save_every: int = 100
    seed: int = 0
    resume: bool = False
    bf16: bool = False
    time_limit_s: float | None = None  # stop (with a checkpoint) after the step that crosses it
    select_widths: tuple[int, ...] = EFFICIENT  # the tree `best/` is chosen for (top-1 nodes branch)
    extra: dict = field(default_factory=dict)  # provenance: target, answers, machine, ...

    def __post_init__(self) -> None:
        for name in (
            "steps",
            "batch_size",
            "groups",
            "max_len",
            "eval_sequences",
            "eval_every",
            "save_every",
        ):
            check_count(name, getattr(self, name))
        if not 0 < self.heldout_fraction < 1:
            raise InvalidArgumentError(f"heldout_fraction must be in (0, 1), got {self.heldout_fraction}")
        check_time_limit(self.time_limit_s)
        if not self.select_widths or not all(isinstance(w, int) and w >= 1 for w in self.select_widths):
            raise InvalidArgumentError(f"select_widths must be integers >= 1, got {self.select_widths!r}")


@torch.no_grad()
def evaluate(
    model: PreTrainedModel, adapter: BiTAAdapter, answers: Sequence[TargetAnswer], config: BiTATrainConfig
) -> dict:
    """Held-out SAR loss, top-1 accuracy per mask, and tokens accepted per step (straight / efficient /
    the tree the selection is for)."""
    was_training = adapter.training
    adapter.eval()
    generator = torch.Generator().manual_seed(config.seed + 7)
    device = next(model.parameters()).device
    losses, correct, counted, straight, efficient, selected = [], None, None, [], [], []
    for start in range(0, len(answers), config.batch_size):
        batch = sar_batch(
            answers[start : start + config.batch_size],
            config.groups,
            adapter.num_masks,
            config.max_len,
            generator,
        )
        batch = {k: v.to(device) for k, v in batch.items()}
        logits = sar_logits(model, adapter, batch).float()
        labels = batch["labels"]
        losses.append(sar_loss(logits, labels).item())
        used = labels != IGNORE
        right = ((logits.argmax(-1) == labels) & used).sum((0, 1))
        correct = right if correct is None else correct + right
        counted = used.sum((0, 1)) if counted is None else counted + used.sum((0, 1))
        straight.append(accepted_per_step(logits, labels, (1,) * adapter.num_masks))
        efficient.append(accepted_per_step(logits, labels, EFFICIENT))
        selected.append(accepted_per_step(logits, labels, config.select_widths))
    adapter.train(was_training)
    return {
        "heldout_loss": sum(losses) / len(losses),
        "heldout_mask_accuracy": (correct / counted.clamp(min=1)).cpu().tolist(),
        "accepted_straight": float(torch.cat([s.flatten() for s in straight]).nanmean()),
        "accepted_efficient": float(torch.cat([e.flatten() for e in efficient]).nanmean()),
        "accepted_selected": float(torch.cat([e.flatten() for e in selected]).nanmean()),
    }


def selected_score(best: dict) -> float:
    """The best checkpoint's score for the selection; a run started before ``select_widths`` existed
    chose on the efficient tree, which is also that field's default."""
    return best.get("accepted_selected", best["accepted_efficient"])


def split(answers: Sequence[TargetAnswer], fraction: float) -> tuple[list, list]:
    """Training answers and the held-out tail (the answers file order is already mixed by seed)."""
    cut = len(answers) - max(1, round(len(answers) * fraction))
    if cut < 1:
        raise InvalidArgumentError(f"{len(answers)} answers are too few to hold {fraction:.0%} out")
    return list(answers[:cut]), list(answers[cut:])


def _start(adapter: BiTAAdapter, config: BiTATrainConfig, output: Path, accelerator) -> tuple:
    """The adapter in train mode (its last checkpoint's weights when resuming) and its run book (the
    optimiser's and schedule's state restored)."""
    checkpoints = checkpoints_in(output) if config.resume else []
    if checkpoints:
        adapter = BiTAAdapter.from_pretrained(checkpoints[-1])
    adapter.train()
    book = RunBook.open(
        output,
        accelerator,
        config,
        adapter.parameters(),
        adapter.save_pretrained,
        score=selected_score,
        checkpoint=checkpoints[-1] if checkpoints else None,
        weight_decay=0.0,
    )
    return adapter, book


def train_bita(
    model: PreTrainedModel,
    adapter: BiTAAdapter,
    answers: Sequence[TargetAnswer],
    config: BiTATrainConfig,
) -> Path:
    """Tune ``adapter`` on ``answers`` with ``model`` frozen; returns the best checkpoint's folder."""
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    train, heldout = split(answers, config.heldout_fraction)
    heldout = heldout[: config.eval_sequences]
    model.requires_grad_(False)
    model.eval()
    adapter, book = _start(adapter, config, output, accelerator)
    # Neither is DDP-wrapped: the frozen model has nothing to train and the adapter is called by its parts
    model, adapter = model.to(accelerator.device), adapter.to(accelerator.device)
    sync_weights(adapter, accelerator)
    rows = rank_rows(config.batch_size, accelerator)
    book.write_config(config)
    autocast = torch.autocast(accelerator.device.type, dtype=torch.bfloat16) if config.bf16 else nullcontext()
    bar = tqdm(
        range(book.step, config.steps),
        initial=book.step,
        total=config.steps,
        desc="train bita",
        disable=not accelerator.is_main_process,
    )
    for step in bar:
        batch = _batch_at(train, config, step, adapter.num_masks, book)
        batch = {k: v[rows].to(accelerator.device) for k, v in batch.items()}  # this process's rows of it
        loss = _sar_step(model, adapter, batch, config, book, autocast)
        record = {"step": step + 1, "processes": accelerator.num_processes}
        record |= {"loss": loss, "lr": book.scheduler.get_last_lr()[0]}
        record |= {"sar_tokens_seen": book.tokens_seen, "elapsed_s": book.elapsed()}
        last = step + 1 == config.steps
        if (step + 1) % config.eval_every == 0 or last:
            with autocast:
                record.update(evaluate(model, adapter, heldout, config))
            book.scored(record)
            bar.set_postfix(acc=f"{record['accepted_selected']:.2f}", loss=f"{record['heldout_loss']:.2f}")
        book.log(record)
        if book.end_step(step + 1, last, config.save_every):
            break
    accelerator.end_training()  # destroys the process group: gloo's threads left alive can abort the exit
    return output / "best"


def _sar_step(
    model, adapter: BiTAAdapter, batch: dict, config: BiTATrainConfig, book: RunBook, autocast
) -> float:
    """One optimiser step of the adapter on this process's rows of a batch, the forward under ``autocast``;
    returns the batch's mean SAR loss over every process."""
    accelerator = book.accelerator
    with autocast:
        logits = sar_logits(model, adapter, batch)
    share = batch_share(int((batch["labels"] != IGNORE).sum()), accelerator)
    loss = sar_loss(logits, batch["labels"]) * share
    loss.backward()
    optimiser_step(list(adapter.parameters()), book.optimizer, book.scheduler, config.grad_clip, accelerator)
    return batch_mean(loss, accelerator).item()


def _batch_at(train: list, config: BiTATrainConfig, step: int, num_masks: int, book: RunBook) -> dict:
    """The whole batch of ``step``, seeded by it alone (a resumed run draws the same batches and prefix
    dropout), counted into ``book.tokens_seen``: every process draws it and trains on its rows."""
    generator = torch.Generator().manual_seed(config.seed * 1_000_003 + step)
    torch.manual_seed(config.seed * 1_000_003 + step)  # prefix dropout
    picks = torch.randint(0, len(train), (config.batch_size,), generator=generator).tolist()
    batch = sar_batch([train[i] for i in picks], config.groups, num_masks, config.max_len, generator)
    book.tokens_seen += int((batch["labels"] != IGNORE).sum())
    return batch
