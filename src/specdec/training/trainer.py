"""Train a draft for a target: cross-entropy on text, logit distillation, sequence-level alignment.

One loop, three data/loss mixes, all optional: each step draws a batch either from the text
stream (loss (1 − λ)·CE + λ·KD against the frozen target) or, every ``align_every`` steps, from the
target's own greedy answers (CE on answer tokens, which are the target's argmax). Batches depend
only on (seed, step) and checkpoints hold model, optimiser, scheduler and step, so an interrupted
run resumed from its last checkpoint reproduces the uninterrupted one. ``accelerate launch`` runs
it data-parallel at the same global batch, following one process's trajectory (see distributed.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import InvalidArgumentError
from specdec.models.surgery import truncated_copy
from specdec.models.vocabulary import check_same_vocabulary
from specdec.training.answers import TargetAnswer
from specdec.training.checkpoints import (
    checkpoints_in,
    freeze_vocabulary,
    load_trainer_state,
    save_trainer_state,
    warmup_cosine,
)
from specdec.training.data import fixed_windows, sample_windows
from specdec.training.distributed import batch_mean, batch_share, optimiser_step, rank_rows, sync_weights
from specdec.training.losses import check_distill_params, cross_entropy, distillation, mixed_loss

PRESETS = {
    # Tandem-Distil: first half plain CE, second half CE and KD mixed with λ = 0.5.
    "tandem-distil": [(0.5, 0.0), (1.0, 0.5)],
}


@dataclass
class TrainConfig:
    output_dir: str
    steps: int = 1000
    batch_size: int = 8
    seq_len: int = 128
    lr: float = 3e-4
    warmup_steps: int = 20
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    distill: str = "kl"
    temperature: float = 1.0
    distill_weight: float = 0.5  # λ in (1 − λ)·CE + λ·KD
    preset: str | None = None  # overrides distill_weight with a staged schedule
    align_every: int = 0  # every k-th step trains on alignment data (0: never)
    eval_every: int = 100
    eval_windows: int = 32
    save_every: int = 200
    seed: int = 0
    resume: bool = False
    freeze_embeddings: bool = True  # the shared vocabulary matrix stays the target's
    # > 0: the model trained is the target itself, with the averaged CE of its first
    # ``early_exit_layer`` layers (shared norm and head) and of its final layer (BiLD §4.4).
    early_exit_layer: int = 0
    extra: dict = field(default_factory=dict)  # provenance recorded in the log (corpus, target, ...)

    def __post_init__(self) -> None:
        check_distill_params(self.distill_weight, self.temperature, self.distill)
        if self.preset is not None and self.preset not in PRESETS:
            raise InvalidArgumentError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        if self.early_exit_layer < 0:
            raise InvalidArgumentError(f"early_exit_layer must be >= 0, got {self.early_exit_layer}")
        for name in ("steps", "batch_size", "seq_len"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be >= 1, got {getattr(self, name)}")

    def weight_at(self, step: int) -> float:
        """λ for this step (the preset's stage, else the constant distill_weight)."""
        if self.preset is None:
            return self.distill_weight
        for end, weight in PRESETS[self.preset]:
            if step < end * self.steps:
                return weight
        return PRESETS[self.preset][-1][1]


def _alignment_batch(examples: list[TargetAnswer], config: TrainConfig, step: int, pad_id: int):
    """Prompt + answer sequences, right-padded; the loss mask covers answer tokens only."""
    generator = torch.Generator().manual_seed(config.seed * 7_919 + step)
    picks = torch.randint(0, len(examples), (config.batch_size,), generator=generator).tolist()
    seqs, masks = [], []
    for i in picks:
        ex = examples[i]
        ids = (ex.prompt_ids + ex.answer_ids)[-(config.seq_len + 1) :]
        n_answer = min(len(ex.answer_ids), len(ids) - 1)
        seqs.append(ids)
        masks.append([False] * (len(ids) - 1 - n_answer) + [True] * n_answer)
    width = max(len(s) for s in seqs)
    tokens = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    loss_mask = torch.zeros(len(seqs), width - 1, dtype=torch.bool)
    attention = torch.zeros(len(seqs), width, dtype=torch.long)
    for row, (ids, mask) in enumerate(zip(seqs, masks, strict=True)):
        tokens[row, : len(ids)] = torch.tensor(ids)
        attention[row, : len(ids)] = 1
        loss_mask[row, : len(mask)] = torch.tensor(mask)
    return tokens, attention, loss_mask


@torch.no_grad()
def evaluate(draft: PreTrainedModel, target: PreTrainedModel, windows: torch.Tensor, batch: int = 8) -> dict:
    """Held-out CE of the draft; its teacher-forced top-1 agreement and α = Σ min(p, q) with the target.

    Both models run in eval mode (no dropout) and get their previous mode back afterwards.
    """
    modes = [(m, m.training) for m in (draft, target)]
    draft.eval(), target.eval()
    ce_sum = agree = alpha = count = 0.0
    device = next(draft.parameters()).device
    for chunk in windows.split(batch):
        chunk = chunk.to(device)
        p_logits = draft(chunk).logits[:, :-1].float()
        q_logits = target(chunk).logits[:, :-1].float()
        n = p_logits.shape[0] * p_logits.shape[1]
        ce_sum += cross_entropy(p_logits, chunk[:, 1:]).item() * n
        agree += (p_logits.argmax(-1) == q_logits.argmax(-1)).sum().item()
        alpha += torch.minimum(p_logits.softmax(-1), q_logits.softmax(-1)).sum(-1).sum().item()
        count += n
    for model, training in modes:
        model.train(training)
    return {"heldout_ce": ce_sum / count, "top1_agreement": agree / count, "alpha": alpha / count}


@dataclass
class _Batch:
    """One step's training batch: token windows (or prompt + answer rows, with their attention and the
    answer tokens' loss mask), the distillation weight λ, and where it came from."""

    tokens: torch.Tensor
    attention: torch.Tensor | None
    mask: torch.Tensor | None
    weight: float
    source: str


def _batch_at(step: int, config: TrainConfig, train_stream, alignment, rows, device, pad_id: int) -> _Batch:
    """Step ``step``'s batch (a function of seed and step only, so a resumed run draws the same), this
    process's ``rows`` of it: alignment data every ``align_every``-th step (or always without text)."""
    if alignment and (train_stream is None or step % config.align_every == config.align_every - 1):
        tokens, attention, mask = _alignment_batch(alignment, config, step + config.seed, pad_id)
        # labels are the target's own argmax: CE is already top-1 distillation, so λ is 0
        return _Batch(
            tokens[rows].to(device), attention[rows].to(device), mask[rows].to(device), 0.0, "alignment"
        )
    tokens = sample_windows(train_stream, config.batch_size, config.seq_len + 1, config.seed, step)
    return _Batch(tokens[rows].to(device), None, None, config.weight_at(step), "text")


def _losses(draft, exit_model, target, batch: _Batch, config: TrainConfig) -> dict:
    """The step's loss terms (tensors, means over this process's rows): ``loss`` to minimise,
    ``ce``, ``kd`` where λ > 0, and with an early exit its own and the final layer's CE."""
    labels = batch.tokens[:, 1:]
    logits = draft(batch.tokens, attention_mask=batch.attention).logits[:, :-1]
    terms = {"ce": cross_entropy(logits, labels, batch.mask)}
    if exit_model is not None:  # the early exit's CE and the final layer's, averaged (BiLD §4.4)
        logits = exit_model(batch.tokens, attention_mask=batch.attention).logits[:, :-1]
        terms["final_ce"], terms["exit_ce"] = terms["ce"], cross_entropy(logits, labels, batch.mask)
        terms["ce"] = 0.5 * (terms["final_ce"] + terms["exit_ce"])
    kd = None
    if batch.weight > 0:  # distils the draft, or the early exit, from the frozen target
        with torch.no_grad():
            teacher = target(batch.tokens, attention_mask=batch.attention).logits[:, :-1]
        kd = terms["kd"] = distillation(logits, teacher, config.temperature, config.distill, batch.mask)
    terms["loss"] = mixed_loss(terms["ce"], kd, batch.weight)
    return terms


def _heldout(draft, exit_model, target, windows: torch.Tensor) -> dict:
    """Held-out scores: the draft against the target; an early exit against the model it drafts for,
    and that model's final layer against the original (``final_`` keys)."""
    if exit_model is None:
        return evaluate(draft, target, windows)
    original = evaluate(draft, target, windows)
    return evaluate(exit_model, draft, windows) | {f"final_{k}": v for k, v in original.items()}


def _resume(draft: PreTrainedModel, config: TrainConfig, output: Path, accelerator):
    """The draft (its last checkpoint's weights when resuming) on the device, its optimiser and schedule
    (their state restored), and the step to start from."""
    checkpoints = checkpoints_in(output) if config.resume else []
    if checkpoints:
        draft = AutoModelForCausalLM.from_pretrained(checkpoints[-1], dtype=torch.float32)
    # Not DDP-wrapped: an early exit runs the same weights through a second module (see distributed.py)
    draft = draft.to(accelerator.device)
    sync_weights(draft, accelerator)
    if config.freeze_embeddings:
        freeze_vocabulary(draft)
    params = [p for p in draft.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(config.warmup_steps, config.steps))
    start_step = 0
    if checkpoints:
        start_step, _, _ = load_trainer_state(checkpoints[-1], optimizer, scheduler)
    return draft, params, optimizer, scheduler, start_step


def _save(draft, tokenizer, optimizer, scheduler, accelerator, folder: Path, step: int) -> None:
    """A checkpoint: weights and tokenizer from the main process, with the optimiser's state to resume."""
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        draft.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        save_trainer_state(folder, step, None, 0, optimizer, scheduler)


def _check_data(train_stream, alignment, config: TrainConfig) -> None:
    """Something to train on, and alignment data only with a schedule that reaches it."""
    if train_stream is None and not alignment:
        raise InvalidArgumentError("nothing to train on: give a text corpus, alignment data, or both")
    if alignment and config.align_every < 1 and train_stream is not None:
        raise InvalidArgumentError("alignment data given but align_every < 1")


def _optimise_on(
    batch: _Batch, models, params, optimizer, scheduler, accelerator, config: TrainConfig
) -> dict:
    """One optimiser step on ``batch`` with ``models`` (draft, its early exit or None, target); returns the
    step's losses averaged over processes, each weighted by its process's share of the batch's tokens."""
    draft, exit_model, target = models
    share = batch_share(
        batch.tokens[:, 1:].numel() if batch.mask is None else int(batch.mask.sum()), accelerator
    )
    terms = _losses(draft, exit_model, target, batch, config)
    (terms["loss"] * share).backward()
    optimiser_step(params, optimizer, scheduler, config.grad_clip, accelerator)
    record = {name: batch_mean(value * share, accelerator).item() for name, value in terms.items()}
    return record | {"lambda": batch.weight, "source": batch.source, "lr": scheduler.get_last_lr()[0]}


def train_draft(
    draft: PreTrainedModel,
    target: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    config: TrainConfig,
    *,
    train_stream: torch.Tensor | None,
    heldout_stream: torch.Tensor | None,
    alignment: list[TargetAnswer] | None = None,
) -> Path:
    """Train ``draft`` in place of its weights and return the final checkpoint folder."""
    check_same_vocabulary(target, tokenizer, draft, None)
    _check_data(train_stream, alignment, config)
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    draft, params, optimizer, scheduler, start_step = _resume(draft, config, output, accelerator)
    draft.train()
    # The early exit shares every parameter with the model, so its loss trains the same weights;
    # copied from the model in train mode, its dropout layers are on like the model's.
    exit_model = truncated_copy(draft, config.early_exit_layer) if config.early_exit_layer else None
    target = target.to(accelerator.device).eval().requires_grad_(False)
    windows = None
    if heldout_stream is not None:
        windows = fixed_windows(heldout_stream, config.eval_windows, config.seq_len + 1)
    main = accelerator.is_main_process
    if main:
        (output / "train_config.json").write_text(json.dumps(asdict(config), indent=1))
    save = partial(_save, draft, tokenizer, optimizer, scheduler, accelerator)
    started, rows = time.perf_counter(), rank_rows(config.batch_size, accelerator)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    desc = "train early exit" if exit_model is not None else "train draft"
    bar = tqdm(
        range(start_step, config.steps), initial=start_step, total=config.steps, desc=desc, disable=not main
    )
    for step in bar:
        batch = _batch_at(step, config, train_stream, alignment, rows, accelerator.device, pad_id)
        record = {"step": step + 1, "processes": accelerator.num_processes}
        record |= _optimise_on(
            batch, (draft, exit_model, target), params, optimizer, scheduler, accelerator, config
        )
        record["elapsed_s"] = round(time.perf_counter() - started, 1)
        if windows is not None and ((step + 1) % config.eval_every == 0 or step + 1 == config.steps):
            record.update(_heldout(draft, exit_model, target, windows))
            bar.set_postfix(ce=f"{record['heldout_ce']:.3f}", agree=f"{record['top1_agreement']:.3f}")
        if main:
            with (output / "log.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")
        if (step + 1) % config.save_every == 0 and step + 1 < config.steps:
            save(output / f"checkpoint-{step + 1}", step + 1)
    save(output / "final", config.steps)
    accelerator.end_training()  # destroys the process group: gloo's threads left alive can abort the exit
    return output / "final"
