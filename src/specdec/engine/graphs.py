"""CUDA graphs of the engine's padded static step: captured once per shape, then replayed.

On a GPU a small model's step is bound by kernel launches, not by the GPU: hundreds of small
kernels, each launched from Python. A CUDA graph records the launches of one step and replays them
with one call. A replay reads its inputs from the addresses it was captured with, so every input
lives in a buffer of fixed shape that new values are copied into; the KV cache buffers are read and
written in place. The engine allocates them for a batch-size bucket (a power of two) and captures a
step per bucket over their first rows, so rows that leave, compaction and rows that join within the
buffers' rows move data in place and every graph stays valid; only reallocation (growth, more rows
than the buffers hold) drops them. It reuses its buffers across batches that fit them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# step(tokens [B, W], positions [B, W], masks, slots [W]) -> logits [B, W, V]; masks: one tensor or
# one per layer type, as the engine's attention_masks gives them.
Step = Callable[[torch.Tensor, torch.Tensor, object, torch.Tensor], torch.Tensor]
_WARM_UP_RUNS = 2  # cuBLAS / attention workspaces are allocated outside the capture


def _masks_list(masks) -> list[torch.Tensor]:
    return list(masks.values()) if isinstance(masks, dict) else [masks]


def masks_to(masks, device: torch.device, copy: bool = False):
    """The engine's attention masks (one tensor, or a dict by layer type) on ``device``; new tensors
    with ``copy``."""
    if isinstance(masks, dict):
        return {k: m.to(device, non_blocking=True, copy=copy) for k, m in masks.items()}
    return masks.to(device, non_blocking=True, copy=copy)


def _on(device: torch.device, tokens, positions, masks, slots) -> tuple:
    """The step's inputs as new tensors on ``device`` (the engine builds all but tokens on the host)."""
    return (
        tokens.to(device, copy=True),
        positions.to(device, copy=True),
        masks_to(masks, device, copy=True),
        slots.to(device, copy=True),
    )


class _Captured:
    """One graph and the buffers it reads (inputs) and writes (logits)."""

    def __init__(self, step: Step, pool, args: tuple):
        self.tokens, self.positions, self.masks, self.slots = args
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(_WARM_UP_RUNS):  # runs the real step: rewrites the same cache slots
                step(*args)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool):
            self.logits = step(*args)

    def replay(self, tokens, positions, masks, slots) -> torch.Tensor:
        # Host-to-device copies from pageable memory: ordered before the replay on the same stream.
        self.tokens.copy_(tokens, non_blocking=True)
        self.positions.copy_(positions, non_blocking=True)
        self.slots.copy_(slots, non_blocking=True)
        for mine, new in zip(_masks_list(self.masks), _masks_list(masks), strict=True):
            mine.copy_(new, non_blocking=True)
        self.graph.replay()
        return self.logits


class StepGraphs:
    """Runs the engine's static step at one padded ``width`` on ``device``, through a CUDA graph per
    input shape (rows, capacity) when ``capture`` is set, or as it is (the same computation, e.g. on
    CPU). Inputs may come from the host; they are copied to the device."""

    def __init__(self, step: Step, width: int, device: torch.device, capture: bool):
        self.step, self.width, self.device, self.capture = step, width, device, capture
        self.graphs: dict[tuple, _Captured] = {}
        self.pool = None  # the first graph's memory pool, shared by the later ones

    def clear(self) -> None:
        """Forget every graph (the cache buffers they read were reallocated), and their pool with them."""
        self.graphs.clear()
        self.pool = None

    def __call__(self, tokens, positions, masks, slots) -> torch.Tensor:
        """The step's logits ``[B, width, V]``; a captured graph's own output buffer, overwritten by
        the next replay (callers copy what they keep)."""
        if not self.capture:
            return self.step(*_on(self.device, tokens, positions, masks, slots))
        key = (tuple(tokens.shape), tuple((m.shape, m.dtype) for m in _masks_list(masks)))
        graph = self.graphs.get(key)
        if graph is None:
            inputs = _on(self.device, tokens, positions, masks, slots)
            graph = self.graphs[key] = _Captured(self.step, self.pool, inputs)
            self.pool = self.pool or graph.graph.pool()
        return graph.replay(tokens, positions, masks, slots)
