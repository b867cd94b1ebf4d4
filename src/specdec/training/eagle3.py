"""Train an EAGLE-3 head on a primary cache, with EAGLE-3's training-time test.

At inference the head drafts a chain: its first guess reads the target's features, every later one
its own previous output. Training only on the first situation leaves the others unseen, so each
step unrolls the chain ``steps`` deep over every position at once (the training-time test): pass j
pairs the token j positions ahead with the features pass j−1 produced, and attends to the real
positions up to its start (pass 0's keys) plus its own chain (the diagonal of each later pass), at
the position the chain has reached. The loss is the soft cross-entropy to the target's cached top-k
distribution (restricted to the draft vocabulary), weighted 0.8^j so the near guesses count most.

Every answer position of the cache's training part trains all depths; held-out answers (the cache's
tail) give the selection metric, the greedy chain's accepted tokens per block of ``steps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from tqdm.auto import tqdm

from specdec.errors import InvalidArgumentError
from specdec.inputs import check_count
from specdec.models.eagle3 import Eagle3Head
from specdec.models.eagle3_layout import load_head, save_head
from specdec.training.bookkeeping import RunBook, check_time_limit
from specdec.training.checkpoints import checkpoints_in
from specdec.training.distributed import (
    batch_count,
    batch_mean,
    global_denominator,
    optimiser_step,
    rank_picks,
    sync_weights,
)
from specdec.training.primary_cache import PrimaryCache, micro_batches, split

LOSS_DECAY = 0.8  # EAGLE-3's weight of the j-th unrolled pass: 0.8^j


@dataclass
class Eagle3TrainConfig:
    output_dir: str
    steps: int = 1000  # optimiser steps
    ttt_steps: int = 4  # chain depth unrolled per position (the training-time test)
    batch_size: int = 16
    lr: float = 1e-3
    warmup_steps: int = 50
    grad_clip: float = 1.0
    heldout_fraction: float = 0.05
    eval_every: int = 100
    eval_sequences: int = 64
    save_every: int = 200
    max_batch_tokens: int | None = None  # micro-batches of at most this many padded tokens (micro_batches)
    seed: int = 0
    resume: bool = False
    bf16: bool = False
    time_limit_s: float | None = None  # stop (with a checkpoint) after the step that crosses it
    extra: dict = field(default_factory=dict)  # provenance: cache, target, draft vocabulary, machine

    def __post_init__(self) -> None:
        for name in ("steps", "ttt_steps", "batch_size", "eval_sequences", "eval_every", "save_every"):
            check_count(name, getattr(self, name))
        if self.max_batch_tokens is not None:
            check_count("max_batch_tokens", self.max_batch_tokens)
        if not 0 < self.heldout_fraction < 1:
            raise InvalidArgumentError(f"heldout_fraction must be in (0, 1), got {self.heldout_fraction}")
        check_time_limit(self.time_limit_s)


def _ahead(tensor: torch.Tensor, shift: int, width: int) -> torch.Tensor:
    """``tensor[:, shift : shift + width]``, zero-padded on the right where the sequence ends."""
    part = tensor[:, shift : shift + width]
    if part.shape[1] == width:
        return part
    pad = tensor.new_zeros(tensor.shape[0], width - part.shape[1], *tensor.shape[2:])
    return torch.cat([part, pad], dim=1)


def unrolled_logits(
    head: Eagle3Head, embeddings: torch.Tensor, batch: dict, depth: int
) -> list[torch.Tensor]:
    """Draft-vocabulary logits ``[B, N−1, Vd]`` of each unrolled pass j < ``depth``: at pair i, the guess
    for token i + 2 + j after j guesses of the head's own."""
    tokens, valid = batch["tokens"], batch["valid"]
    batch_size, width = tokens.shape[0], tokens.shape[1] - 1
    features = head.fuse({h: batch["hidden"][h][:, :width] for h in head.aux_layers})
    causal = torch.ones(width, width, dtype=torch.bool, device=tokens.device).tril()
    diagonal = torch.eye(width, dtype=torch.bool, device=tokens.device)
    positions = torch.arange(width, device=tokens.device)[None].expand(batch_size, width)
    keys_valid = valid[:, :width]
    past, outputs = None, []
    for j in range(depth):
        embeds = F.embedding(_ahead(tokens, 1 + j, width), embeddings)
        sees = torch.cat([causal] + [diagonal] * j, dim=-1)[None, None]
        mask = sees & keys_valid.repeat(1, j + 1)[:, None, None, :]
        mask[..., j * width :] |= diagonal  # a padding position sees itself (no empty softmax)
        out = head(embeds, features, positions + j, mask, past)
        outputs.append(out.logits)
        past = (
            (out.keys, out.values)
            if past is None
            else (
                torch.cat([past[0], out.keys], 2),
                torch.cat([past[1], out.values], 2),
            )
        )
        features = out.prenorm
    return outputs


def pass_targets(batch: dict, j: int, width: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For pass j: which pairs guess an answer token, and the target's top-k values and ids there."""
    where = _ahead(batch["next_is_answer"] & batch["valid"], 1 + j, width)
    return where, _ahead(batch["topk_values"], 1 + j, width), _ahead(batch["topk_ids"], 1 + j, width)


def draft_index(head: Eagle3Head) -> torch.Tensor:
    """``[V]`` each target id's index in the draft vocabulary, −1 off it."""
    index = torch.full((head.config.vocab_size,), -1, dtype=torch.long, device=head.d2t.device)
    return index.index_copy_(0, head.draft_ids, torch.arange(len(head.d2t), device=head.d2t.device))


def _teacher(batch: dict, j: int, width: int, index: torch.Tensor) -> tuple:
    """Pass j's answer positions, and at those whose top-k reaches the draft vocabulary at all (``kept``)
    the target's top-k renormalised on it, with their draft-vocabulary indices."""
    where, values, ids = pass_targets(batch, j, width)
    draft_ids = index[ids[where]]
    teacher = torch.softmax(values[where].float(), -1) * (draft_ids >= 0)
    mass = teacher.sum(-1, keepdim=True)
    kept = mass[:, 0] > 0
    return where, kept, teacher[kept] / mass[kept], draft_ids[kept].clamp(min=0)


def pass_counts(batch: dict, index: torch.Tensor, depth: int) -> list[int]:
    """Each pass's positions that count in its loss (``kept`` in :func:`_teacher`)."""
    width = batch["tokens"].shape[1] - 1
    return [int(_teacher(batch, j, width, index)[1].sum()) for j in range(depth)]


def ttt_loss(
    logits: list[torch.Tensor], batch: dict, index: torch.Tensor, denominators: Sequence[float] | None = None
) -> tuple[torch.Tensor, list[float]]:
    """Σ_j 0.8^j · soft CE of pass j to the target's top-k (renormalised on the draft vocabulary), over
    Σ_j 0.8^j. Each pass's sum is divided by its ``denominators`` entry: the whole step's position count
    when ``batch`` is one micro-batch of it, spread over the processes in several (``global_denominator``);
    by default the batch's own count."""
    total, weights, per_pass = logits[0].new_zeros((), dtype=torch.float32), 0.0, []
    for j, step_logits in enumerate(logits):
        where, kept, teacher, draft_ids = _teacher(batch, j, step_logits.shape[1], index)
        log_p = torch.log_softmax(step_logits[where].float(), -1)
        summed = -(teacher * log_p[kept].gather(-1, draft_ids)).sum()
        denominator = max(float(kept.sum()), 1.0) if denominators is None else denominators[j]
        loss = summed / denominator
        total = total + LOSS_DECAY**j * loss
        weights += LOSS_DECAY**j
        per_pass.append(loss.item())
    return total / weights, per_pass


@torch.no_grad()
def evaluate_head(
    head: Eagle3Head, embeddings, cache: PrimaryCache, indices: Sequence[int], depth: int, batch: int = 8
) -> dict:
    """Held-out greedy agreement with the target at each depth, and the tokens a greedy chain of ``depth``
    gets accepted per block (chains starting where every guess is an answer token)."""
    was_training = head.training
    head.eval()
    agree, counted, accepted, chains = [0.0] * depth, [0] * depth, 0.0, 0
    for start in range(0, len(indices), batch):
        data = cache.batch(indices[start : start + batch], embeddings.device)
        logits = unrolled_logits(head, embeddings, data, depth)
        matches, inside = [], None
        for j, step_logits in enumerate(logits):
            where, _, ids = pass_targets(data, j, step_logits.shape[1])
            match = (head.draft_ids[step_logits.argmax(-1)] == ids[..., 0]) & where
            agree[j] += match.sum().item()
            counted[j] += where.sum().item()
            matches.append(match)
            inside = where if inside is None else inside & where
        run = torch.stack(matches, -1).long().cumprod(-1).sum(-1)
        accepted += run[inside].sum().item()
        chains += int(inside.sum())
    head.train(was_training)
    report = {"heldout_agreement": agree[0] / max(counted[0], 1)}
    report |= {f"heldout_agreement_d{j}": agree[j] / max(counted[j], 1) for j in range(1, depth)}
    return report | {"accepted_per_chain": accepted / max(chains, 1)}


def check_cache(head: Eagle3Head, cache: PrimaryCache) -> None:
    missing = set(head.aux_layers) - set(cache.hidden_layers)
    if missing:
        raise InvalidArgumentError(
            f"the head reads target hidden states {list(head.aux_layers)}, the cache holds "
            f"{list(cache.hidden_layers)}: rebuild it with `specdec data primary --hidden-layers` including "
            f"{sorted(missing)}"
        )


def _train_step(
    model: Eagle3Head, embeddings: torch.Tensor, cache: PrimaryCache, ids: Sequence[int], index, context: dict
) -> tuple[float, list[float], int]:
    """One optimiser step on sequences ``ids``: micro-batches under ``max_batch_tokens``, their gradients
    summed (each pass's loss is over the whole step's positions, in every process: see ttt_loss), then
    one update. Returns the loss, each pass's, and the answer positions seen."""
    config, accelerator = context["config"], context["accelerator"]
    groups = micro_batches([cache.length(i) for i in ids], config.max_batch_tokens)
    batches = [cache.batch([ids[r] for r in group], accelerator.device) for group in groups]
    counts = [sum(c) for c in zip(*(pass_counts(b, index, config.ttt_steps) for b in batches), strict=True)]
    denominators = [global_denominator(c, accelerator) for c in counts]
    loss, per_pass, answers = 0.0, [0.0] * config.ttt_steps, 0
    for batch in batches:
        with context["autocast"]:
            logits = unrolled_logits(model, embeddings, batch, config.ttt_steps)
        part, parts = ttt_loss(logits, batch, index, denominators)
        part.backward()
        loss += part.item()
        per_pass = [a + b for a, b in zip(per_pass, parts, strict=True)]
        answers += int((batch["next_is_answer"] & batch["valid"]).sum())
    optimiser_step(
        list(model.parameters()), context["optimizer"], context["scheduler"], config.grad_clip, accelerator
    )
    return loss, per_pass, answers


def _start(head: Eagle3Head, config: Eagle3TrainConfig, output: Path, accelerator, verifier: dict) -> tuple:
    """The head on the device in train mode (its last checkpoint's weights when resuming) and its run book
    (the optimiser's and schedule's state restored), the weights the same in every process."""
    checkpoints = checkpoints_in(output) if config.resume else []
    head = load_head(checkpoints[-1]) if checkpoints else head
    model = head.to(accelerator.device).train()  # not DDP-wrapped: the passes call its parts (_train_step)
    book = RunBook.open(
        output,
        accelerator,
        config,
        model.parameters(),
        lambda folder: save_head(model, folder, verifier, speculative_tokens=config.ttt_steps),
        score=lambda scores: scores["accepted_per_chain"],
        checkpoint=checkpoints[-1] if checkpoints else None,
    )
    sync_weights(model, accelerator)
    book.write_config(config)
    return model, book


def train_eagle3(
    head: Eagle3Head, embeddings: torch.Tensor, cache: PrimaryCache, config: Eagle3TrainConfig, verifier: dict
) -> Path:
    """Train ``head`` (reading the frozen target ``embeddings``) on ``cache``; returns the best checkpoint's
    folder, in the speculators layout (``verifier``: the target's name and architectures)."""
    check_cache(head, cache)
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    train_ids, heldout_ids = split(cache, config.heldout_fraction)
    heldout_ids = heldout_ids[: config.eval_sequences]
    model, book = _start(head, config, output, accelerator, verifier)
    embeddings, index = embeddings.detach().to(accelerator.device), draft_index(model)

    def score_and_log(record: dict) -> None:
        """Held-out scores into ``record`` (a better chain than the best's becomes the best), then the log."""
        record |= evaluate_head(model, embeddings, cache, heldout_ids, config.ttt_steps)
        book.scored(record)
        book.log(record)

    autocast = torch.autocast(accelerator.device.type, dtype=torch.bfloat16) if config.bf16 else nullcontext()
    context = {"config": config, "accelerator": accelerator, "autocast": autocast}
    context |= {"optimizer": book.optimizer, "scheduler": book.scheduler}
    if book.step == 0:  # the starting head's scores: the bar a continued one must clear
        score_and_log({"step": 0, "tokens_seen": 0})
    for step in tqdm(
        range(book.step, config.steps), initial=book.step, total=config.steps, desc="train eagle3"
    ):
        picks, _ = rank_picks(len(train_ids), config.batch_size, config.seed, step, accelerator)
        loss, per_pass, answers = _train_step(
            model, embeddings, cache, [train_ids[i] for i in picks], index, context
        )
        book.tokens_seen += batch_count(answers, accelerator)
        record = {"step": step + 1, "processes": accelerator.num_processes}
        loss = batch_mean(torch.tensor(loss), accelerator).item()
        record |= {"loss": loss, "loss_per_pass": per_pass, "lr": book.scheduler.get_last_lr()[0]}
        record |= {"tokens_seen": book.tokens_seen, "elapsed_s": book.elapsed()}
        last = step + 1 == config.steps
        if (step + 1) % config.eval_every == 0 or last:
            score_and_log(record)
        else:
            book.log(record)
        if book.end_step(step + 1, last, config.save_every):
            break
    accelerator.end_training()  # destroys the process group: gloo's threads left alive can abort the exit
    return output / "best"
