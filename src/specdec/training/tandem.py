"""Train a Tandem secondary, or the equally sized distilled draft it is measured against, on a primary cache.

Tandem-CE is cross-entropy on the target's own answers; Tandem-Distil (the paper's two stages) is CE
for the first half of the steps, then λ·KD + (1 − λ)·CE with λ = 0.5, KD being the soft cross-entropy
to the primary's cached top-k distribution. One block-causal pass (Fig. 1) trains every position of
a sequence, with blocks of γ_train tokens whose boundaries move by a random offset each step. The
baseline (``architecture="draft"``, the paper's Gecko-Distil) is the same secondary without the
projections, trained on the same batches with the same losses and steps, so the comparison is fair.

Both are judged by what drafting needs, on held-out answers: top-1 agreement with the primary,
Σ_top-k min(p, q) (a lower bound of α), and the tokens a greedy SPEED block of γ accepts
(γ = 3, 5, 7); the checkpoint with the most accepted tokens at γ = 5 is kept as ``best/``, since
acceptance can peak while the loss still falls. Batches depend only on (seed, step), so ``resume``
continues exactly where a run stopped.
"""

from __future__ import annotations

import json
import shutil
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import InvalidArgumentError
from specdec.inputs import check_count
from specdec.models.tandem import TandemModel
from specdec.training.bookkeeping import RunBook, check_time_limit
from specdec.training.checkpoints import (
    TRAINER_STATE_FILE,
    checkpoints_in,
    freeze_vocabulary,
)
from specdec.training.distributed import batch_count, batch_mean, global_denominator, rank_picks
from specdec.training.primary_cache import PrimaryCache, split
from specdec.training.tandem_objective import answer_positions, evaluate_on_cache, losses, student_logits

ARCHITECTURES = ("tandem", "draft")
PRESETS = ("ce", "distil")


@dataclass
class TandemTrainConfig:
    output_dir: str
    architecture: str = "tandem"  # or "draft": the same secondary without projections (the baseline)
    preset: str = "distil"  # "ce": Tandem-CE; "distil": CE, then λ = 0.5 CE + KD (Tandem-Distil)
    steps: int = 1000
    batch_size: int = 8  # sequences per step
    lr: float = 3e-4
    warmup_steps: int = 50
    grad_clip: float = 1.0
    gamma: int = 2  # γ_train, the block length of the training mask
    distill_weight: float = 0.5
    temperature: float = 1.0
    heldout_fraction: float = 0.05
    eval_every: int = 100
    eval_sequences: int = 64
    save_every: int = 200
    seed: int = 0
    resume: bool = False
    # A checkpoint of another run to continue from (e.g. Tandem-CE from Tandem-Distil's half-way
    # checkpoint: both are CE up to there, on the same batches); its log up to that step is copied.
    branch_from: str | None = None
    bf16: bool = False  # autocast the forward (worth it on AVX-512 BF16 / AMX CPUs and on GPUs)
    time_limit_s: float | None = None  # stop (with a checkpoint) after the step that crosses it
    extra: dict = field(default_factory=dict)  # provenance: cache, primary, machine, ...

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise InvalidArgumentError(
                f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}"
            )
        if self.preset not in PRESETS:
            raise InvalidArgumentError(f"preset must be one of {PRESETS}, got {self.preset!r}")
        for name in ("steps", "batch_size", "gamma", "eval_sequences"):
            check_count(name, getattr(self, name))
        if not 0 < self.heldout_fraction < 1:
            raise InvalidArgumentError(f"heldout_fraction must be in (0, 1), got {self.heldout_fraction}")
        check_time_limit(self.time_limit_s)

    def weight_at(self, step: int) -> float:
        """λ, the distillation weight: 0 for Tandem-CE and for the first half of Tandem-Distil."""
        return self.distill_weight if self.preset == "distil" and step >= self.steps // 2 else 0.0


def _branch(checkpoint: Path, output: Path) -> None:
    """Start ``output`` from another run's ``checkpoint-K``: the checkpoint and that run's log up to K."""
    if not (checkpoint / TRAINER_STATE_FILE).is_file():
        raise InvalidArgumentError(f"--branch-from expects a checkpoint-K folder of a run, got {checkpoint}")
    step = int(torch.load(checkpoint / TRAINER_STATE_FILE, weights_only=False)["step"])
    shutil.copytree(checkpoint, output / checkpoint.name)
    log = checkpoint.parent / "log.jsonl"
    lines = log.read_text().splitlines() if log.is_file() else []
    kept = [line for line in lines if json.loads(line)["step"] <= step]
    (output / "log.jsonl").write_text("".join(line + "\n" for line in kept))


def _save(model, folder: Path, tokenizer: PreTrainedTokenizerBase | None) -> None:
    model.save_pretrained(folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder / "secondary" if isinstance(model, TandemModel) else folder)


def load_checkpoint(kind: str, folder: Path) -> TandemModel | PreTrainedModel:
    if kind == "tandem":
        return TandemModel.from_pretrained(folder)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)


def train_tandem(
    model: TandemModel | PreTrainedModel,
    cache: PrimaryCache,
    config: TandemTrainConfig,
    tokenizer: PreTrainedTokenizerBase | None = None,
) -> Path:
    """Train ``model`` (a TandemModel, or a plain draft for ``architecture="draft"``) on ``cache``;
    returns the folder of the best checkpoint by held-out accepted tokens at γ = 5."""
    _check_pair(model, cache, config)
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    train_ids, heldout_ids = split(cache, config.heldout_fraction)
    heldout_ids = heldout_ids[: config.eval_sequences]
    model, book = _start(model, config, output, accelerator, tokenizer)
    # The schedule stays unprepared: accelerate would step it once per process, as if each process's batch
    # were another step's; here the processes share one batch (see distributed.py)
    model, book.optimizer = accelerator.prepare(model, book.optimizer)
    model.train()
    book.write_config(config)
    autocast = torch.autocast(accelerator.device.type, dtype=torch.bfloat16) if config.bf16 else nullcontext()
    steps = range(book.step, config.steps)
    bar = tqdm(steps, initial=book.step, total=config.steps, desc=f"train {config.architecture}")
    for step in bar:
        record = _distil_step(model, cache, train_ids, config, step, book, autocast)
        last = step + 1 == config.steps
        if (step + 1) % config.eval_every == 0 or last:
            record.update(
                evaluate_on_cache(accelerator.unwrap_model(model), cache, heldout_ids, config.gamma)
            )
            book.scored(record)
            bar.set_postfix(
                agree=f"{record['heldout_agreement']:.3f}", acc5=f"{record['accepted_per_block_g5']:.2f}"
            )
        book.log(record)
        if book.end_step(step + 1, last, config.save_every):
            break
    accelerator.end_training()  # destroys the process group: gloo's threads left alive can abort the exit
    return output / "best"


def _start(model, config: TandemTrainConfig, output: Path, accelerator, tokenizer) -> tuple:
    """The model (its last checkpoint's weights when resuming or branching) with its vocabulary frozen, and
    its run book (the optimiser's and schedule's state restored)."""
    if config.branch_from and not checkpoints_in(output):
        _branch(Path(config.branch_from), output)
    checkpoints = checkpoints_in(output) if config.resume or config.branch_from else []
    if checkpoints:
        model = load_checkpoint(config.architecture, checkpoints[-1])
    secondary = model.secondary if isinstance(model, TandemModel) else model
    freeze_vocabulary(secondary)  # the shared vocabulary stays the target's
    book = RunBook.open(
        output,
        accelerator,
        config,
        [p for p in model.parameters() if p.requires_grad],
        lambda folder: _save(model, folder, tokenizer),  # the module accelerator.prepare wraps
        score=lambda scores: scores["accepted_per_block_g5"],
        checkpoint=checkpoints[-1] if checkpoints else None,
    )
    if checkpoints and config.branch_from and book.step == int(Path(config.branch_from).name.split("-")[1]):
        book.best = None  # a branch picks its best among its own evaluations (the source's best/ isn't here)
    return model, book


def _check_pair(model: TandemModel | PreTrainedModel, cache: PrimaryCache, config: TandemTrainConfig) -> None:
    """Fail before training starts where the model is not the configured kind or reads primary layers the
    cache does not hold."""
    if isinstance(model, TandemModel) != (config.architecture == "tandem"):
        raise InvalidArgumentError(
            f"architecture {config.architecture!r} does not match {type(model).__name__}"
        )
    if isinstance(model, TandemModel) and set(model.layer_map) - set(cache.hidden_layers):
        raise InvalidArgumentError(
            f"the secondary reads primary layers {model.layer_map} but the cache holds {cache.hidden_layers}"
        )


def _distil_step(
    model, cache: PrimaryCache, train_ids: list, config: TandemTrainConfig, step: int, book: RunBook, autocast
) -> dict:
    """One optimiser step on the batch of ``step`` (drawn from the seed and ``step`` alone, so a resumed run
    draws the same ones), the forward under ``autocast``; returns its log record."""
    accelerator = book.accelerator
    picks, generator = rank_picks(len(train_ids), config.batch_size, config.seed, step, accelerator)
    offset = int(torch.randint(0, config.gamma, (1,), generator=generator))
    batch = cache.batch([train_ids[i] for i in picks], accelerator.device)
    keep = answer_positions(batch)
    with autocast:
        tandem = config.architecture == "tandem"
        logits = student_logits(model, batch, config.gamma, offset, tandem=tandem, keep=keep)
    ce, kd = losses(logits, batch, config.temperature)
    weight = config.weight_at(step)
    loss = ce if weight == 0 else (1 - weight) * ce + weight * kd
    positions = int(keep.sum())
    share = positions / global_denominator(positions, accelerator)  # 1 in one process
    accelerator.backward(loss * share)
    loss = batch_mean(loss * share, accelerator)
    if config.grad_clip:
        accelerator.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], config.grad_clip)
    book.optimizer.step()
    book.scheduler.step()
    book.optimizer.zero_grad()
    book.tokens_seen += batch_count(int((batch["next_is_answer"] & batch["valid"]).sum()), accelerator)
    record = {"step": step + 1, "processes": accelerator.num_processes}
    record |= {"loss": loss.item(), "ce": ce.item(), "kd": kd.item(), "lambda": weight}
    return record | {
        "lr": book.scheduler.get_last_lr()[0],
        "tokens_seen": book.tokens_seen,
        "elapsed_s": book.elapsed(),
    }
