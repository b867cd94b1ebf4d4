"""What lets a training loop run under ``accelerate launch`` (N processes, DDP over gloo or NCCL) and follow
one process's trajectory at the same global batch.

Each step's batch is drawn by (seed, step) alone and dealt out by rank (:func:`rank_picks`,
:func:`rank_rows`), so the processes together train on what one process trains on. A process's loss is
its masked sum over the batch's positions spread evenly over the processes (:func:`global_denominator`),
so the gradients averaged over processes are those of the whole batch's mean, however unevenly the
positions fall. Modules called by their parts rather than through a DDP wrapper (an EAGLE-3 head, a
BiTA adapter, a draft with an early exit sharing its weights) start from the main process's weights
(:func:`sync_weights`) and average their gradients themselves (:func:`sync_gradients`). In one process
every helper is the identity.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from accelerate.utils import broadcast
from torch import nn

from specdec.errors import InvalidArgumentError


def rank_rows(batch_size: int, accelerator) -> slice:
    """The rows of a batch of ``batch_size`` this process trains on (an uneven split is refused)."""
    world = accelerator.num_processes
    if batch_size % world:
        raise InvalidArgumentError(
            f"a batch of {batch_size} sequences does not split evenly over {world} processes"
        )
    return slice(accelerator.process_index, None, world)


def rank_picks(
    count: int, batch_size: int, seed: int, step: int, accelerator
) -> tuple[list[int], torch.Generator]:
    """This process's share of step ``step``'s batch of ``batch_size`` indices in [0, ``count``), and the
    generator, for anything else the step draws (the same in every process)."""
    rows = rank_rows(batch_size, accelerator)
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
    picks = torch.randint(0, count, (batch_size,), generator=generator).tolist()
    return picks[rows], generator


def batch_count(count: int, accelerator) -> int:
    """``count`` summed over the processes: the whole batch's (answer positions, for tokens seen)."""
    if accelerator.num_processes == 1:
        return int(count)
    return int(accelerator.reduce(torch.tensor(int(count), device=accelerator.device), reduction="sum"))


def global_denominator(count: float, accelerator) -> float:
    """What a process divides its loss sum by so that the gradients averaged over N processes are those of
    the whole batch's mean: the batch's ``count`` (summed over processes) / N; ``count`` alone in one."""
    world = accelerator.num_processes
    if world == 1:
        return max(float(count), 1.0)
    total = accelerator.reduce(torch.tensor(float(count), device=accelerator.device), reduction="sum")
    return max(float(total), 1.0) / world


def batch_share(count: float, accelerator) -> float:
    """The factor that turns a process's mean loss over its ``count`` positions into its share of the whole
    batch's mean (1 in one process)."""
    return float(count) / global_denominator(count, accelerator) if count else 0.0


def batch_mean(share: torch.Tensor, accelerator) -> torch.Tensor:
    """The whole batch's mean loss from each process's ``share`` (its loss × positions / denominator)."""
    if accelerator.num_processes == 1:
        return share.detach()
    return accelerator.reduce(share.detach(), reduction="sum") / accelerator.num_processes


def sync_weights(module: nn.Module, accelerator) -> None:
    """Every process starts from the main process's weights, as a DDP wrapper would make it."""
    if accelerator.num_processes > 1:
        with torch.no_grad():
            for tensor in module.state_dict().values():
                tensor.copy_(broadcast(tensor.clone(), from_process=0))


def sync_gradients(parameters: Iterable[nn.Parameter], accelerator) -> None:
    """Average the gradients over the processes, as a DDP wrapper would after ``backward``."""
    if accelerator.num_processes > 1:
        for parameter in parameters:
            if parameter.grad is not None:
                parameter.grad = accelerator.reduce(parameter.grad, reduction="mean")


def optimiser_step(
    parameters: list[nn.Parameter], optimizer, scheduler, grad_clip: float, accelerator
) -> None:
    """After ``backward``: the gradients averaged over the processes (:func:`sync_gradients`), clipped to
    ``grad_clip`` (0: not clipped), one optimiser and schedule step, the gradients cleared."""
    sync_gradients(parameters, accelerator)
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(parameters, grad_clip)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
