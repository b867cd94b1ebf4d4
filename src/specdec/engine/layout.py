"""Where a block's tokens go and what each of them sees: position ids, the causal or tree mask inside
the block, the earlier slots each query reads, and the eager layout of mask and key positions. A mixin
of :class:`~specdec.engine.Engine` (it reads the engine's slot table and cache), kept apart from the
forward so the block arithmetic can be read alone.
"""

from __future__ import annotations

import torch

from specdec.engine.batch import HOST
from specdec.engine.cache import SlotCache
from specdec.engine.slots import SlotTable
from specdec.errors import PromptError


class BlockLayout:
    """Position ids, masks and key positions of a block over the engine's slots."""

    cache: SlotCache | None
    slots: SlotTable
    max_positions: int | None
    read_bucket: int
    num_tokens: torch.Tensor  # each row's tokens so far (the engine's batch state)

    def _positions(self, block: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        """The block's position ids on the host: given, or each row's length plus the tree depth."""
        if positions is None:
            positions = (self.num_tokens[:, None] + block.sum(-1) - 1).clamp(min=0)
        positions = positions.to(HOST)
        if self.max_positions is not None and int(positions.max()) >= self.max_positions:
            raise PromptError(f"sequence exceeds the model's context of {self.max_positions} tokens")
        return positions

    def _place(self, tokens, block, positions, sees_reserved, run_width: int, static: bool) -> tuple:
        """Make room for a block run at ``run_width`` tokens, lay it out (:meth:`_layout`) and point the
        cache's writes and reads at it: returns (tokens, mask, positions, key positions, write slots)."""
        self._make_room(run_width)
        block |= torch.eye(block.shape[-1], dtype=torch.bool)  # padding rows attend to themselves
        first, past = self._visible(block.shape[-1], sees_reserved)
        start = self.slots.length
        *layout, read_end = self._layout(tokens, past, block, positions, first, run_width if static else None)
        self.cache.write_start, self.cache.read_start, self.cache.read_end = start, first, read_end
        return tuple(layout)

    def _layout(self, tokens, past, block, positions, first: int, run_width: int | None) -> tuple:
        """(tokens, mask, positions, key positions, write slots, read end) of the forward: an eager block
        reads up to its bucketed end and writes after the last slot; a static step (``run_width`` given)
        pads the block to that width and spans the whole cache (read end 0: the tokens stay where the
        write slots put them)."""
        if run_width is None:
            mask, key_pos, read_end = self._eager_layout(past, block, positions, first)
            return tokens, mask, positions, key_pos, None, read_end
        mask, positions, key_pos, write_slots = self._static_layout(past, block, positions, first, run_width)
        batch, width = tokens.shape
        pad = torch.zeros(batch, run_width - width, dtype=torch.long, device=tokens.device)
        return torch.cat([tokens, pad], dim=1), mask, positions, key_pos, write_slots, 0

    def _block_mask(self, batch: int, width: int, token_mask, tree_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """The block's token mask ``[B, T]`` and who-sees-whom inside it ``[B, T, T]`` (causal, or the
        tree's), on the host."""
        if token_mask is None:
            token_mask = torch.ones(batch, width, dtype=torch.bool)
        token_mask = token_mask.to(HOST)
        block = torch.ones(width, width, dtype=torch.bool).tril()
        if tree_mask is not None:
            block = tree_mask.to(HOST, torch.bool)
        return token_mask, block.expand(batch, width, width) & token_mask[:, None, :]

    def _visible(self, width: int, sees_reserved: torch.Tensor | None) -> tuple[int, torch.Tensor]:
        """The first slot attention reads and which earlier slots each query sees ``[B, T, L]``. The
        reserved slots are read only when a query may see them, so a block that has none computes exactly
        what it would without them."""
        asks = sees_reserved is not None and bool(sees_reserved.any())
        first = 0 if asks else self.slots.reserved
        past = self.slots.visible(first, width)
        if asks:
            past = past.clone()
            past[..., : self.slots.reserved] = sees_reserved.to(HOST, torch.bool)[:, :, None]
        return first, past

    def _eager_layout(self, past, block, positions, first: int) -> tuple:
        """The mask ``[B, 1, T, K]`` and key positions of an eager block over slots ``first`` up to a
        multiple of ``read_bucket`` slots (the free ones beyond the block masked out), and that end."""
        batch, width = positions.shape
        length = self.slots.length
        end = length + width
        read_end = min(self.cache.capacity, first + -(-(end - first) // self.read_bucket) * self.read_bucket)
        beyond = torch.zeros(batch, width, read_end - end, dtype=torch.bool)
        mask = torch.cat([past, block, beyond], dim=-1)[:, None]
        slot_pos = self.slots.positions
        key_pos = torch.cat([slot_pos[:, first:length], positions, slot_pos[:, end:read_end]], -1)
        return mask, key_pos, read_end
