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

from specdec.engine.output import ExtendOutput

# Given input embeddings of a block: ([B, W, d] embeddings, [B, W] True where they replace the token's own).
Given = tuple[torch.Tensor, torch.Tensor] | None
# step(tokens [B, W], positions [B, W], masks, slots [W], hidden_layers, given) -> logits [B, W, V] and the
# hidden states [B, W, d] of those layers; masks: one tensor or one per layer type, as attention_masks gives.
Step = Callable[[torch.Tensor, torch.Tensor, object, torch.Tensor, tuple[int, ...], Given], ExtendOutput]
_WARM_UP_RUNS = 2  # cuBLAS / attention workspaces are allocated outside the capture


def _masks_list(masks) -> list[torch.Tensor]:
    return list(masks.values()) if isinstance(masks, dict) else [masks]


def masks_to(masks, device: torch.device, copy: bool = False):
    """The engine's attention masks (one tensor, or a dict by layer type) on ``device``; new tensors
    with ``copy``."""
    if isinstance(masks, dict):
        return {k: m.to(device, non_blocking=True, copy=copy) for k, m in masks.items()}
    return masks.to(device, non_blocking=True, copy=copy)


def _on(device: torch.device, tokens, positions, masks, slots, given: Given) -> tuple:
    """The step's inputs as new tensors on ``device`` (the engine builds all but tokens on the host)."""
    return (
        tokens.to(device, copy=True),
        positions.to(device, copy=True),
        masks_to(masks, device, copy=True),
        slots.to(device, copy=True),
        None if given is None else tuple(t.to(device, copy=True) for t in given),
    )


class _Captured:
    """One graph and the buffers it reads (inputs) and writes (logits, the hidden states asked for)."""

    def __init__(self, step: Step, pool, args: tuple, hidden_layers: tuple[int, ...]):
        self.tokens, self.positions, self.masks, self.slots, self.given = args
        args = (*args[:4], hidden_layers, args[4])
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(_WARM_UP_RUNS):  # runs the real step: rewrites the same cache slots
                step(*args)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool):
            self.output = step(*args)

    def replay(self, tokens, positions, masks, slots, given: Given) -> ExtendOutput:
        # Host-to-device copies from pageable memory: ordered before the replay on the same stream.
        self.tokens.copy_(tokens, non_blocking=True)
        self.positions.copy_(positions, non_blocking=True)
        self.slots.copy_(slots, non_blocking=True)
        for mine, new in zip(_masks_list(self.masks), _masks_list(masks), strict=True):
            mine.copy_(new, non_blocking=True)
        for mine, new in zip(self.given or (), given or (), strict=True):
            mine.copy_(new, non_blocking=True)
        self.graph.replay()
        return self.output


class StepGraphs:
    """Runs the engine's static step at one padded ``width`` on ``device``, through a CUDA graph per
    input shape (rows, capacity), set of hidden layers returned and kind of input (token ids only, or
    with given embeddings) when ``capture`` is set, or as it is (the same computation, e.g. on CPU).
    Inputs may come from the host; they are copied to the device. A drafter that reads the target's
    hidden states (an EAGLE-3 head, a Tandem secondary) or gives embeddings (BiTA's mask tokens) does
    so at every verify, so it adds one graph per shape, not one per step."""

    def __init__(self, step: Step, width: int, device: torch.device, capture: bool):
        self.step, self.width, self.device, self.capture = step, width, device, capture
        self.graphs: dict[tuple, _Captured] = {}
        self.pool = None  # the first graph's memory pool, shared by the later ones

    def clear(self) -> None:
        """Forget every graph (the cache buffers they read were reallocated), and their pool with them."""
        self.graphs.clear()
        self.pool = None

    def __call__(
        self, tokens, positions, masks, slots, hidden_layers: tuple[int, ...] = (), given: Given = None
    ) -> ExtendOutput:
        """The step's logits ``[B, width, V]`` and hidden states ``[B, width, d]`` of ``hidden_layers``; a
        captured graph's own output buffers, overwritten by the next replay (callers copy what they keep)."""
        if not self.capture:
            inputs = _on(self.device, tokens, positions, masks, slots, given)
            return self.step(*inputs[:4], hidden_layers, inputs[4])
        masks_key = tuple((m.shape, m.dtype) for m in _masks_list(masks))
        key = (tuple(tokens.shape), masks_key, hidden_layers, given is not None)
        graph = self.graphs.get(key)
        if graph is None:
            inputs = _on(self.device, tokens, positions, masks, slots, given)
            graph = self.graphs[key] = _Captured(self.step, self.pool, inputs, hidden_layers)
            self.pool = self.pool or graph.graph.pool()
        return graph.replay(tokens, positions, masks, slots, given)
