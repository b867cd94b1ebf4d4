"""How much a batch's KV cache needs, and whether the device has it, before anything is allocated.

Asking the allocator and catching its failure works for a cache that grows step by step, but a
request for millions of rows would first spend minutes building Python lists and then die in
torch's allocator; an estimate up front turns that into one clear error.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import PretrainedConfig

from specdec.errors import CacheMemoryError

# Per slot the engine also keeps a validity flag and a position id for every row.
_BOOKKEEPING_BYTES = 1 + 8


def kv_bytes_per_slot(config: PretrainedConfig, dtype: torch.dtype) -> int:
    """Bytes one token's keys and values take across all layers (plus the engine's bookkeeping)."""
    config = config.get_text_config()
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    itemsize = torch.empty(0, dtype=dtype).element_size()
    return config.num_hidden_layers * 2 * kv_heads * head_dim * itemsize + _BOOKKEEPING_BYTES


def available_memory(device: torch.device) -> int | None:
    """Free memory on ``device`` in bytes, or None when it cannot be read (the check is then skipped)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type == "cpu":
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
    return None


def check_fits(rows: int, slots: int, per_slot: int, device: torch.device) -> None:
    """Raise :class:`CacheMemoryError` if ``rows`` × ``slots`` cache slots cannot fit on ``device``."""
    needed = rows * slots * per_slot
    free = available_memory(device)
    if free is not None and needed > free:
        raise CacheMemoryError(
            f"{rows} row(s) × {slots} cache slots need ~{needed / 2**30:.3g} GiB of KV cache but "
            f"{device} has ~{free / 2**30:.3g} GiB free: use fewer prompts × num_samples or shorter prompts"
        )
