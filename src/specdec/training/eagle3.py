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

import json
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from tqdm.auto import tqdm

from specdec.errors import InvalidArgumentError
from specdec.inputs import check_count
from specdec.models.eagle3 import Eagle3Head
from specdec.models.eagle3_layout import load_head, save_head
from specdec.training.checkpoints import checkpoints_in, load_trainer_state, save_trainer_state, warmup_cosine
from specdec.training.distributed import (
    batch_count,
    batch_mean,
    global_denominator,
    rank_picks,
    sync_gradients,
    sync_weights,
)
from specdec.training.primary_cache import PrimaryCache, split

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
    seed: int = 0
    resume: bool = False
    bf16: bool = False
    extra: dict = field(default_factory=dict)  # provenance: cache, target, draft vocabulary, machine

    def __post_init__(self) -> None:
        for name in ("steps", "ttt_steps", "batch_size", "eval_sequences", "eval_every", "save_every"):
            check_count(name, getattr(self, name))
        if not 0 < self.heldout_fraction < 1:
            raise InvalidArgumentError(f"heldout_fraction must be in (0, 1), got {self.heldout_fraction}")


def on_device(batch: dict, device: torch.device) -> dict:
    moved = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
    return moved | {"hidden": {h: s.to(device) for h, s in batch["hidden"].items()}}


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


def ttt_loss(
    logits: list[torch.Tensor], batch: dict, index: torch.Tensor, denominator=lambda n: max(float(n), 1.0)
) -> tuple[torch.Tensor, list[float]]:
    """Σ_j 0.8^j · soft CE of pass j to the target's top-k (renormalised on the draft vocabulary), over
    Σ_j 0.8^j. Each pass's sum is divided by ``denominator(positions)``: its position count in one
    process, the batch's count spread over the processes in several (see ``global_denominator``)."""
    total, weights, per_pass = logits[0].new_zeros((), dtype=torch.float32), 0.0, []
    for j, step_logits in enumerate(logits):
        where, values, ids = pass_targets(batch, j, step_logits.shape[1])
        log_p = torch.log_softmax(step_logits[where].float(), -1)
        draft_ids = index[ids[where]]
        teacher = torch.softmax(values[where].float(), -1) * (draft_ids >= 0)
        mass = teacher.sum(-1, keepdim=True)
        kept = mass[:, 0] > 0  # positions whose top-k reaches the draft vocabulary at all
        teacher = teacher[kept] / mass[kept]
        summed = -(teacher * log_p[kept].gather(-1, draft_ids[kept].clamp(min=0))).sum()
        loss = summed / denominator(int(kept.sum()))
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
        data = on_device(cache.batch(indices[start : start + batch]), embeddings.device)
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


def _optimise(
    head: Eagle3Head, loss: torch.Tensor, optimizer, scheduler, accelerator, grad_clip: float
) -> None:
    """One step on ``loss``; with several processes on the batch's gradient (their mean: see ttt_loss)."""
    loss.backward()
    sync_gradients(head.parameters(), accelerator)
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(head.parameters(), grad_clip)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()


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
    checkpoints = checkpoints_in(output) if config.resume else []
    head = load_head(checkpoints[-1]) if checkpoints else head
    embeddings, index = embeddings.detach().to(accelerator.device), draft_index(head).to(accelerator.device)
    optimizer = torch.optim.AdamW(head.parameters(), lr=config.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(config.warmup_steps, config.steps))
    start, best, tokens_seen = (
        load_trainer_state(checkpoints[-1], optimizer, scheduler) if checkpoints else (0, None, 0)
    )
    model = head.to(accelerator.device).train()  # not DDP-wrapped: the passes call its parts (see _optimise)
    sync_weights(model, accelerator)
    denominator = partial(global_denominator, accelerator=accelerator)
    if accelerator.is_main_process and not (config.resume and (output / "train_config.json").is_file()):
        (output / "train_config.json").write_text(json.dumps(asdict(config), indent=1))

    def save(folder: Path, step: int) -> None:
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            save_head(model, folder, verifier, speculative_tokens=config.ttt_steps)
            save_trainer_state(folder, step, best, tokens_seen, optimizer, scheduler)

    autocast = torch.autocast(accelerator.device.type, dtype=torch.bfloat16) if config.bf16 else nullcontext()
    if start == 0:  # the starting head's scores: the bar a continued head must clear to become the best
        record = {"step": 0, "tokens_seen": 0} | evaluate_head(
            model, embeddings, cache, heldout_ids, config.ttt_steps
        )
        best = {"step": 0} | {k: v for k, v in record.items() if k.startswith(("heldout", "accepted"))}
        save(output / "best", 0)
        if accelerator.is_main_process:
            with (output / "log.jsonl").open("a") as f:
                f.write(json.dumps(record | {"best_step": 0}) + "\n")
    started = time.perf_counter()
    for step in tqdm(range(start, config.steps), initial=start, total=config.steps, desc="train eagle3"):
        picks, _ = rank_picks(len(train_ids), config.batch_size, config.seed, step, accelerator)
        batch = on_device(cache.batch([train_ids[i] for i in picks]), accelerator.device)
        with autocast:
            logits = unrolled_logits(model, embeddings, batch, config.ttt_steps)
        loss, per_pass = ttt_loss(logits, batch, index, denominator)
        _optimise(model, loss, optimizer, scheduler, accelerator, config.grad_clip)
        loss = batch_mean(loss, accelerator)
        tokens_seen += batch_count(int((batch["next_is_answer"] & batch["valid"]).sum()), accelerator)
        record = {
            "step": step + 1,
            "processes": accelerator.num_processes,
            "loss": loss.item(),
            "loss_per_pass": per_pass,
            "lr": scheduler.get_last_lr()[0],
        }
        record |= {"tokens_seen": tokens_seen, "elapsed_s": round(time.perf_counter() - started, 1)}
        last = step + 1 == config.steps
        if (step + 1) % config.eval_every == 0 or last:
            record |= evaluate_head(model, embeddings, cache, heldout_ids, config.ttt_steps)
            if best is None or record["accepted_per_chain"] > best["accepted_per_chain"]:
                best = {"step": step + 1} | {
                    k: v for k, v in record.items() if k.startswith(("heldout", "accepted"))
                }
                save(output / "best", step + 1)
            record["best_step"] = best["step"]
        if accelerator.is_main_process:
            with (output / "log.jsonl").open("a") as f:
                f.write(json.dumps(record) + "\n")
        if (step + 1) % config.save_every == 0 or last:
            save(output / f"checkpoint-{step + 1}", step + 1)
    return output / "best"
