"""The static-shape step policy of an :class:`~specdec.engine.Engine`: which blocks run as compiled
static-shape steps (``torch.compile``) or replay a captured CUDA graph, and how their fixed-shape
inputs are laid out. Kept apart from the eager forward and the slot bookkeeping, which do not
depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from specdec.engine.attention import grouped_attention_copy
from specdec.engine.compiling import compile_step
from specdec.engine.graphs import Given, StepGraphs
from specdec.engine.lean import lean_forward
from specdec.engine.modeling import attention_masks, with_cache
from specdec.engine.output import ExtendOutput
from specdec.errors import InvalidArgumentError

STATIC_WIDTHS = 16  # widest block a compiled engine runs as a static-shape step (verify blocks, trees)
GRAPH_CAPACITY_STEP = 64  # graphed engines round cache capacities up to this: fewer shapes to capture


def graph_rows(batch_size: int) -> int:
    """The batch-size bucket a graphed step runs at (a power of two: 1, 2, 4, 8, ...): rows that join
    or leave within a bucket replay the graphs already captured for it."""
    return 1 << max(0, batch_size - 1).bit_length()


class StaticSteps:
    """Compiled and graphed steps, mixed into the engine (they read its model, cache and slot table)."""

    compiled: Callable | None
    graphs: StepGraphs | None

    def capture_graphs(
        self,
        width: int = STATIC_WIDTHS,
        *,
        capture: bool | None = None,
        compile: bool = False,
        warm_up: bool = True,
    ) -> None:
        """Run every block of up to ``width`` token ids as one static step of exactly ``width``
        tokens, replayed from a CUDA graph (``capture``; default: on CUDA). A block that asks for hidden
        states replays a graph captured with them as outputs (one per set of layers asked for), one with
        given embeddings (BiTA's mask tokens) a graph that takes them as an input.

        One padded width for decoding (one token) and verifying (γ + 1) is what makes their greedy
        tokens agree on a GPU: the matrix products then have the same shape, so cuBLAS picks the same
        kernel and reduction order for both, where a one-row and a five-row product may differ in the
        last bits and flip a near-tie. Padding queries see only themselves and write to the free slots
        after the block, which the next block overwrites. On a GPU the wider step costs next to
        nothing (a step reads every weight once either way). ``capture=False`` runs the same padded
        steps without graphs (any device; what a graph replays, for checking it). ``compile``: the
        captured step is the model under ``torch.compile`` (inductor's fused kernels: a graph of
        eager kernels still pays a few µs for each of the hundreds of small ones); it compiles now
        (``warm_up``) or at first use.
        """
        capture = self.device.type == "cuda" if capture is None else capture
        if capture and self.device.type != "cuda":
            raise InvalidArgumentError(f"CUDA graphs need a CUDA device; this engine is on {self.device}")
        if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= STATIC_WIDTHS:
            raise InvalidArgumentError(f"graph width must be an integer in 1..{STATIC_WIDTHS}, got {width!r}")
        self.graphs = StepGraphs(self._static_step, width, self.device, capture)
        if compile:
            self.compile_steps(warm_up=False)
            if warm_up:  # an eager prefill, then the padded step: compiled and captured
                self.warm_up_serving(widths=(1,), batched=False)

    def _replay(
        self, tokens, mask, positions, key_pos, write_slots, width: int, hidden_layers=(), given: Given = None
    ) -> ExtendOutput:
        """Logits ``[B, width, V]`` (and hidden states ``[B, width, d]`` of ``hidden_layers``) of a padded
        block, through the graphs of its batch-size bucket: the rows up to the bucket (within the
        buffers' rows) are padding whose queries see only their own write slots, and whose keys land
        in buffer rows no live row holds. ``given``: embeddings in place of some tokens' own."""
        batch, run_width = tokens.shape
        extra = min(graph_rows(batch), self.cache.allocated_rows) - batch
        if extra:
            pad_mask = torch.zeros(extra, 1, run_width, mask.shape[-1], dtype=torch.bool)
            pad_mask[:, 0, :, write_slots] = torch.eye(run_width, dtype=torch.bool)
            tokens = torch.cat([tokens, tokens.new_zeros(extra, run_width)])
            mask = torch.cat([mask, pad_mask])
            positions = torch.cat([positions, positions.new_zeros(extra, run_width)])
            key_pos = torch.cat([key_pos, key_pos.new_zeros(extra, key_pos.shape[-1])])
            if given is not None:
                embeds, replaced = given
                given = (
                    torch.cat([embeds, embeds.new_zeros(extra, *embeds.shape[1:])]),
                    torch.cat([replaced, replaced.new_zeros(extra, run_width)]),
                )
        masks = attention_masks(self.config, self.dtype, mask, positions, key_pos)
        out = self.graphs(tokens, positions, masks, write_slots, tuple(hidden_layers), given)
        hidden = {i: h[:batch, :width] for i, h in out.hidden_states.items()}
        return ExtendOutput(logits=out.logits[:batch, :width], hidden_states=hidden)

    def _static_step(
        self, tokens, positions, masks, slots: torch.Tensor, hidden_layers=(), given: Given = None
    ) -> ExtendOutput:
        """Logits of a block whose new tokens go to cache ``slots`` (reads span the capacity), and the
        hidden states of ``hidden_layers``; ``given`` embeddings replace the tokens' own where marked."""
        self.cache.slots = slots
        try:
            if given is None and (self.lean_hidden if hidden_layers else self.lean) and self.compiled is None:
                return lean_forward(
                    self.model, tokens, positions, masks, self.cache, hidden_layers=hidden_layers
                )
            inputs = self._inputs(tokens, *(given or (None, None)))  # the eager path's own mixing
            out = (self.model if self.compiled is None else self.compiled)(
                **inputs,
                position_ids=positions,
                attention_mask=masks,
                **with_cache(self.model, self.cache),
                use_cache=True,
                output_hidden_states=bool(hidden_layers),
            )
            hidden = {i: out.hidden_states[i] for i in hidden_layers}
            return ExtendOutput(logits=out.logits, hidden_states=hidden)
        finally:
            self.cache.slots = None

    def compile_steps(self, warm_up: bool = True, one_token: bool = False) -> None:
        """Run blocks of 2 to ``STATIC_WIDTHS`` tokens through ``torch.compile`` from now on.

        The user's model (its own weights, not the engine's packed copy; on a CPU a copy sharing them whose
        attention reads grouped key/value heads in place) under inductor, with symbolic width and capacity:
        one graph for every verify block (inductor's on-disk cache did not shorten a later process's CPU
        build in the thirty-ninth session's runs); on a CPU with inductor's C++ GEMM kernels on frozen
        weights (:mod:`specdec.engine.compiling`: fast at one row where the eager engine's oneDNN kernels
        are not; logits equal to the eager engine's to fp32 rounding, not bit for bit). ``one_token`` adds
        a graph for one-token steps (dynamo specialises sizes of 1). ``warm_up`` compiles now, on a scratch
        one-row batch, so no generation pays a compile midway (batches of several rows, and passes returning
        hidden states, compile on first use, or in :meth:`warm_up_serving`).
        """
        # Every compiled model's graphs share one dynamo cache (transformers' forward wrapper is one
        # function for all models of a kind), whose default limit of 8 entries a target and a draft
        # with two graphs each, in two batch shapes, already reach; past it dynamo runs eagerly.
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
        # Float attributes (norm eps, attention scale) as constants: left symbolic, dynamo traced each
        # graph twice (a restart in its scalar pass), 110 s instead of 80 s for the target's two graphs.
        torch._dynamo.config.specialize_float = True
        # On a CPU, a copy reading each key/value head in place (engine/attention.py): a 5-token verify
        # block 5 % cheaper than through repeat_kv's copies on SmolLM2 (benchmarks/campaigns/
        # compiled-verify-probe-2026-11-29.py). Not measured on a GPU, whose graphs keep the user's attention.
        model = self.user_model if self.device.type != "cpu" else grouped_attention_copy(self.user_model)
        _install_output_hooks(model, self.device)
        self.compiled = compile_step(model, self.device)
        self._smallest_static = 1 if one_token else 2
        if warm_up:  # the prompt's prefill is eager (it allocates the cache), then each graph once
            self.warm_up_serving(widths=(1, 2) if one_token else (2,), batched=False)

    def _untied_capacity(self, least: int, taken: set[int]) -> int:
        """The smallest capacity wish from ``least`` on whose allocated slots are none of ``taken``."""
        while self._capacity_for(least) in taken:
            least += 1
        return least

    def _model_sizes(self) -> set[int]:
        """Sizes a step's inputs have anyway (1 and 2: a one-token step and the first block; the heads, the
        head dimension, the hidden size of given embeddings, a graph's width), which a scratch batch's
        sizes must avoid: dynamo's duck sizing gives equal sizes one symbol, and a later size that breaks
        the tie compiles again."""
        graph_width = self.graphs.width if self.graphs else 1
        return {1, 2, *self._head_sizes(), self.config.hidden_size, graph_width}

    def _head_sizes(self) -> set[int]:
        """The key/value heads, query heads and head dimension: sizes of the cache's buffers and of every
        attention input, fixed for the model."""
        config = self.config
        heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        return {heads, config.num_attention_heads, head_dim}

    @torch.inference_mode()
    def warm_up_serving(
        self,
        hidden_layers: Sequence[int] = (),
        widths: Sequence[int] = (1, 2),
        batched: bool = True,
        embeds: bool = False,
    ) -> None:
        """Compile now the steps a batch meets, with ``hidden_layers`` (its drafter's): one row and, where
        ``batched`` (a server), rows joining it (the cache then keeps spare rows) and one row left in that
        wider cache, each with a block of each of ``widths`` tokens (a one-token step; 2: a verify block)
        — shapes dynamo compiles apart; ``embeds``: verify blocks with given embeddings too (BiTA's
        masks), another graph on a CPU (a GPU's graphs take them as they are). A server that skips this
        compiles them under its first requests (~2 minutes each on a 2-core CPU); each one it compiles
        and never meets (plain decoding has no verify blocks, one prompt no joining rows) costs as much at
        start-up. Nothing to do on an eager engine.

        The scratch batch's sizes (capacity, rows) differ from every other size the step's inputs have:
        dynamo's duck sizing gives equal sizes one symbol, so a first capacity equal to, say, the head
        dimension ties the two and the next capacity recompiles (64 slots on a 64-wide head: 13 s of a
        GPU run)."""
        if (self.compiled is None and self.graphs is None) or self.cache is not None:
            return
        taken = self._model_sizes()
        rows = next(r for r in range(3, 64) if r not in taken and graph_rows(r) not in taken)
        prompt, hidden = [0] * 8, tuple(hidden_layers)
        capacity = self._untied_capacity(len(prompt) + 24, taken | {rows, graph_rows(rows)})
        try:
            self.start([prompt], extra_slots=capacity - len(prompt), hidden_layers=hidden)
            self._blocks(widths, hidden, embeds)
            if batched:
                self.admit([prompt] * (rows - 1), hidden_layers=hidden)
                self._blocks(widths, hidden, embeds)
                self.release(range(1, rows))
                self._blocks(widths, hidden, embeds)
        except RuntimeError as err:  # dynamo / inductor failures are RuntimeErrors
            self.compiled = None
            raise InvalidArgumentError(
                f"torch.compile could not compile {type(self.model).__name__}'s step "
                f"({type(err).__name__}); use the eager engine (compile=False)"
            ) from err
        finally:
            self.cache = None
            self._drop_graphs()

    def _blocks(self, widths: Sequence[int], hidden_layers: tuple[int, ...], embeds: bool = False) -> None:
        """A block of each of ``widths`` tokens over the running batch (``embeds``: verify blocks again with
        given embeddings, where a compiled CPU step traces them apart). A verify width equal to a head size
        goes one wider: tied to it by duck sizing, the block's width would be fixed with the head size
        (the cache's index copy fixes it; a model with two key/value heads compiled its verify graph for
        blocks of exactly 2 tokens and compiled again at the first block of 4)."""
        heads = self._head_sizes()
        for width in widths:
            while 1 < width < STATIC_WIDTHS and width in heads:
                width += 1
            tokens = torch.zeros(self.batch_size, width, dtype=torch.long, device=self.device)
            self.extend(tokens, hidden_layers=hidden_layers)
            if embeds and width > 1 and self.graphs is None:
                given = torch.zeros(self.batch_size, width, self.config.hidden_size, dtype=self.dtype)
                self.extend(tokens, hidden_layers=hidden_layers, embeds=given)

    def _static_layout(self, past, block, positions, first: int, run_width: int) -> tuple:
        """Inputs fixed in shape for (rows, run width, capacity): the mask ``[B, 1, run width, capacity]``
        spans the whole cache (free and rolled-back slots masked out), padding queries (beyond the
        block) see only their own slot, and the new tokens' slots come as a tensor. Returns the mask,
        the padded positions, every slot's key position and the slots."""
        batch, width = positions.shape
        start = self.slots.length
        mask = torch.zeros(batch, run_width, self.cache.capacity, dtype=torch.bool)
        mask[:, :width, first:start] = past
        mask[:, :width, start : start + width] = block
        mask[:, width:, start + width : start + run_width] = torch.eye(run_width - width, dtype=torch.bool)
        positions = torch.cat([positions, torch.zeros(batch, run_width - width, dtype=torch.long)], dim=1)
        key_pos = self.slots.positions.clone()
        key_pos[:, start : start + run_width] = positions
        return mask[:, None], positions, key_pos, torch.arange(start, start + run_width)

    def _drop_graphs(self) -> None:
        """The cache buffers were reallocated: graphs captured over the old ones must not replay."""
        if self.graphs is not None:
            self.graphs.clear()


def _install_output_hooks(model: torch.nn.Module, device: torch.device) -> None:
    """One eager forward of one token asking for hidden states, before ``model`` is compiled.

    transformers installs its hidden-state capturing hooks at a model's first such call, under a
    ``threading.Lock`` dynamo cannot enter: left to the first compiled step that asks for hidden states,
    that is a graph break in each of its graphs (8 in SmolLM2's engine with an EAGLE-3 head's layers).
    Installed here, outside dynamo, every graph compiles whole (the break sat before the model's layers:
    its steps took the same time either way, ``benchmarks/campaigns/output-hooks-probe-2026-11-29.py``).
    Harmless where a model records hidden states otherwise."""
    with torch.no_grad():
        one_token = torch.zeros(1, 1, dtype=torch.long, device=device)
        model(input_ids=one_token, use_cache=False, output_hidden_states=True)
