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
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from specdec.errors import InvalidArgumentError
from specdec.models.surgery import truncated_copy
from specdec.models.vocabulary import check_same_vocabulary
from specdec.training.answers import TargetAnswer
from specdec.training.data import fixed_windows, sample_windows
from specdec.training.distributed import batch_mean, batch_share, rank_rows, sync_gradients, sync_weights
from specdec.training.losses import check_distill_params, cross_entropy, distillation, mixed_loss

TRAINER_STATE_FILE = "trainer_state.pt"  # the Tandem and BiTA trainers' resume state per checkpoint

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
    return state["step"], state["best"], state["tokens_seen"]


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
    if train_stream is None and not alignment:
        raise InvalidArgumentError("nothing to train on: give a text corpus, alignment data, or both")
    if alignment and config.align_every < 1 and train_stream is not None:
        raise InvalidArgumentError("alignment data given but align_every < 1")
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    rows = rank_rows(config.batch_size, accelerator)

    start_step = 0
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
    if checkpoints:
        state = torch.load(checkpoints[-1] / "trainer_state.pt", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step = state["step"]
    draft.train()
    # The early exit shares every parameter with the model, so its loss trains the same weights;
    # copied from the model in train mode, its dropout layers are on like the model's.
    exit_model = truncated_copy(draft, config.early_exit_layer) if config.early_exit_layer else None
    target = target.to(accelerator.device).eval().requires_grad_(False)
    eval_windows = (
        fixed_windows(heldout_stream, config.eval_windows, config.seq_len + 1)
        if heldout_stream is not None
        else None
    )
    log_path = output / "log.jsonl"
    if accelerator.is_main_process:
        (output / "train_config.json").write_text(json.dumps(asdict(config), indent=1))

    def log(record: dict) -> None:
        if accelerator.is_main_process:
            with log_path.open("a") as f:
                f.write(json.dumps(record) + "\n")

    def save(folder: Path, step: int) -> None:
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            draft.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
            state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
            torch.save(state, folder / "trainer_state.pt")

    started = time.perf_counter()
    bar = tqdm(
        range(start_step, config.steps),
        initial=start_step,
        total=config.steps,
        desc="train early exit" if exit_model is not None else "train draft",
        disable=not accelerator.is_main_process,
    )
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for step in bar:
        use_alignment = bool(alignment) and (
            train_stream is None or step % config.align_every == config.align_every - 1
        )
        if use_alignment:  # the whole batch by (seed, step), this process's rows of it
            tokens, attention, mask = _alignment_batch(alignment, config, step + config.seed, pad_id)
            tokens, attention, mask = tokens[rows].to(accelerator.device), attention[rows], mask[rows]
            attention, mask = attention.to(accelerator.device), mask.to(accelerator.device)
            weight = 0.0  # labels are the target's own argmax: CE is already top-1 distillation
        else:
            tokens = sample_windows(train_stream, config.batch_size, config.seq_len + 1, config.seed, step)
            tokens, attention, mask, weight = (
                tokens[rows].to(accelerator.device),
                None,
                None,
                config.weight_at(step),
            )
        share = batch_share(tokens[:, 1:].numel() if mask is None else int(mask.sum()), accelerator)
        logits = draft(tokens, attention_mask=attention).logits[:, :-1]
        ce = cross_entropy(logits, tokens[:, 1:], mask)
        extra = {}
        if exit_model is not None:
            logits = exit_model(tokens, attention_mask=attention).logits[:, :-1]
            exit_ce = cross_entropy(logits, tokens[:, 1:], mask)
            extra = {
                "final_ce": batch_mean(ce * share, accelerator).item(),
                "exit_ce": batch_mean(exit_ce * share, accelerator).item(),
            }
            ce = 0.5 * (ce + exit_ce)
        kd = None
        if weight > 0:  # distils the draft, or the early exit, from the frozen target
            with torch.no_grad():
                teacher = target(tokens, attention_mask=attention).logits[:, :-1]
            kd = distillation(logits, teacher, config.temperature, config.distill, mask)
        loss = mixed_loss(ce, kd, weight)
        (loss * share).backward()
        sync_gradients(params, accelerator)
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        record = {
            "step": step + 1,
            "processes": accelerator.num_processes,
            "loss": batch_mean(loss * share, accelerator).item(),
            "ce": batch_mean(ce * share, accelerator).item(),
            "lambda": weight,
            "source": "alignment" if use_alignment else "text",
            "lr": scheduler.get_last_lr()[0],
            "elapsed_s": round(time.perf_counter() - started, 1),
            **extra,
        }
        if kd is not None:
            record["kd"] = batch_mean(kd * share, accelerator).item()
        if eval_windows is not None and ((step + 1) % config.eval_every == 0 or step + 1 == config.steps):
            if exit_model is None:
                record.update(evaluate(draft, target, eval_windows))
            else:  # the exit against the model it drafts for; the final layer against the original
                record.update(evaluate(exit_model, draft, eval_windows))
                original = evaluate(draft, target, eval_windows)
                record.update({f"final_{k}": v for k, v in original.items()})
            bar.set_postfix(ce=f"{record['heldout_ce']:.3f}", agree=f"{record['top1_agreement']:.3f}")
        log(record)
        if (step + 1) % config.save_every == 0 and step + 1 < config.steps:
            save(output / f"checkpoint-{step + 1}", step + 1)
    final = output / "final"
    save(final, config.steps)
    return final
