"""BiTA's streamlined generation and verification (§3.2, Alg. 1): the target drafts for itself.

Each target pass scores [pending token, draft tree] and, in the same pass, runs a group of mask
tokens after the pending token and after every tree node (as many as the tree is deep, at most the
adapter's M). Verification keeps a path; the mask group of the path's last token (the pending token
if nothing was kept) saw exactly the context the next step continues, and its outputs are the next
step's candidates: the top-k_d tokens of mask d for depth d of the tree. Mask tokens and the
rejected nodes leave the cache; the prompt tokens' keys and values sit in the target engine's
reserved slots, seen by mask tokens only.

Tree shapes (Table 4): ``straight`` (top-1 of each mask, a chain), ``full-K`` (every combination of
the top-K of each mask) and ``efficient`` (top 5/4/3, only the top-1 candidate has children). The
candidates are deterministic (top-k), so verification stays lossless under sampling: the coupled
walk emits the target's own choices, recursive rejection sampling treats them as one-hot proposals.
An adapter loads by spec (``bita:PATH``, ``bita[SHAPE]:PATH``: :func:`bita_drafter`) at the shape
``specdec eval bita`` measured fastest for the kind of device, recorded beside it (``tree_shape.json``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters.base import BlockExtra, Draft, Drafter, Feedback
from specdec.engine import Engine, ExtendOutput
from specdec.errors import InvalidArgumentError
from specdec.models.bita import BiTAAdapter
from specdec.models.packaged import packaged_bitas
from specdec.sampling import Draws, Sampling, top_tokens, tree_attention


@dataclass(frozen=True)
class TreeShape:
    """Candidates per depth (``widths[d]`` top tokens of mask d + 1); ``full``: every candidate has
    children, else only the top-1 one (the efficient tree)."""

    widths: tuple[int, ...]
    full: bool = False

    def __post_init__(self) -> None:
        if not self.widths or not all(isinstance(w, int) and w >= 1 for w in self.widths):
            raise InvalidArgumentError(f"tree widths must be integers >= 1, got {self.widths!r}")

    @classmethod
    def parse(cls, spec: str, num_masks: int) -> TreeShape:
        """``straight``, ``full-K`` or ``efficient`` (5/4/3…), or explicit widths ``5,4,3`` / ``5/4/3``."""
        if spec == "straight":
            return cls((1,) * num_masks)
        if spec == "efficient":
            return cls(tuple(max(1, 5 - d) for d in range(num_masks)))
        if spec.startswith("full-") and spec.removeprefix("full-").isdigit():
            return cls((int(spec.removeprefix("full-")),) * num_masks, full=True)
        parts = spec.replace("/", ",").split(",")
        if all(p.isdigit() for p in parts):
            return cls(tuple(int(p) for p in parts))
        raise InvalidArgumentError(
            f"tree shape must be straight, efficient, full-K or widths like 5,4,3 or 5/4/3; got {spec!r}"
        )

    def check_depth(self, num_masks: int) -> None:
        """Mask d drafts depth d, so a tree d deep needs an adapter with at least d mask tokens."""
        if len(self.widths) > num_masks:
            raise InvalidArgumentError(
                f"a tree {len(self.widths)} deep needs as many mask tokens; the adapter has {num_masks}"
            )

    def block_width(self) -> int:
        """Positions of a full step's block: the pending token, N nodes and a mask group (one mask per
        depth) after each of them, 1 + N + (N + 1)·depth."""
        nodes = len(self.nodes(len(self.widths))[0])
        return 1 + nodes + (nodes + 1) * len(self.widths)

    def nodes(self, depth: int) -> tuple[tuple[int, ...], list[tuple[int, int]]]:
        """The tree cut to ``depth`` levels: ``parents`` and each node's (depth, rank among candidates)."""
        parents: list[int] = []
        nodes: list[tuple[int, int]] = []
        level = [-1]  # nodes whose children come next
        for d, width in enumerate(self.widths[:depth]):
            nxt = []
            for parent in level:
                for rank in range(width):
                    parents.append(parent)
                    nodes.append((d, rank))
                    if self.full or rank == 0:
                        nxt.append(len(parents) - 1)
            level = nxt
        return tuple(parents), nodes


class BiTADrafter(Drafter):
    """Drafts with the target itself through a :class:`~specdec.models.bita.BiTAAdapter`."""

    proposes_trees = True
    gives_embeddings = True

    def __init__(self, adapter: BiTAAdapter, shape: TreeShape | str = "efficient", *, name: str = "bita"):
        self.adapter, self.name = adapter.eval(), name
        self.shape = TreeShape.parse(shape, adapter.num_masks) if isinstance(shape, str) else shape
        self.shape.check_depth(adapter.num_masks)
        self.reserved_slots = adapter.num_prompts if adapter.kind != "none" else 0
        # Mask d drafts depth d, and masks see only earlier ones: a tree d deep needs d masks a group,
        # and the adapter's later masks would only widen every block.
        self.num_masks = len(self.shape.widths)
        self.block_positions = len(self.shape.widths) + self.num_masks
        self.engine: Engine | None = None

    def validate(self, target: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None) -> None:
        self.adapter.check_model(target)

    def attach(self, engine: Engine) -> None:
        self.engine = engine

    @torch.inference_mode()
    def begin(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        if self.engine is None:
            raise InvalidArgumentError("the BiTA drafter runs on the target's engine: attach it first")
        self.draft_calls = 0
        if self.reserved_slots:
            self.engine.write_reserved(self.adapter.prefix(self.engine.model))
        self.mask_logits: torch.Tensor | None = None  # [B, M, V] from the last pass, for the next draft
        self._masked = False  # whether the last draft carried mask groups

    @torch.inference_mode()
    def propose(
        self,
        gamma: int,
        sampling: Sampling,
        draws: Draws,
        *,
        min_confidence: float | torch.Tensor = 0.0,
    ) -> Draft:
        """The tree from the last pass's mask outputs, cut so its deepest mask group still fits in the
        ``gamma`` positions after the pending token; with mask groups for the next step."""
        batch, masks = self.engine.batch_size, self.num_masks
        self._masked = gamma >= masks
        if not self._masked:  # no room for a mask group: a plain target step
            return Draft.empty(batch)
        depth = 0 if self.mask_logits is None else min(len(self.shape.widths), gamma - masks)
        parents, nodes = self.shape.nodes(depth)
        tokens = torch.zeros(batch, len(nodes), dtype=torch.long)
        if nodes:
            widest = max(self.shape.widths[:depth])
            top = top_tokens(self.mask_logits[:, :depth], widest).cpu()  # [B, depth, widest]
            for i, (d, rank) in enumerate(nodes):
                tokens[:, i] = top[:, d, rank]
        return Draft(tokens, parents=parents, extra=self._mask_groups(batch, parents))

    @torch.inference_mode()
    def chain_draft(self, tokens: torch.Tensor) -> Draft:
        """Another source's chain ``[B, L]`` (prompt lookup's, every row proposing all L) as this step's
        draft, with this adapter's mask groups after the pending token and after every token: wherever a
        row's kept tokens end, the next step has candidates from that context."""
        parents = tuple(range(-1, tokens.shape[1] - 1))
        self._masked = True
        return Draft(tokens, parents=parents, extra=self._mask_groups(tokens.shape[0], parents))

    def _mask_groups(self, batch: int, parents: tuple[int, ...]) -> BlockExtra:
        """A mask group after the pending token and after every node, each mask seeing its group's
        anchor, the anchor's ancestors and its own group's earlier masks."""
        masks, nodes = self.num_masks, len(parents)
        tree = tree_attention(parents)
        extra = (nodes + 1) * masks
        sees = torch.zeros(extra, nodes + 1 + extra, dtype=torch.bool)
        for anchor in range(nodes + 1):
            for i in range(masks):
                row = anchor * masks + i
                sees[row, : nodes + 1] = tree[anchor]
                sees[row, nodes + 1 + anchor * masks : nodes + 1 + row + 1] = True
        embeds = self.adapter.mask_embeddings(nodes + 1, self.engine.model.dtype, masks)
        return BlockExtra(embeds[None].expand(batch, -1, -1).to(self.engine.device), sees)

    @torch.inference_mode()
    def update(self, feedback: Feedback) -> None:
        if not self._masked:
            self.mask_logits = None
            return
        masks = self.num_masks
        logits = feedback.target.logits
        batch = logits.shape[0]
        nodes = (logits.shape[1] - masks) // (1 + masks)  # width = 1 + N + (N + 1) · masks
        anchors = torch.zeros(batch, dtype=torch.long)  # block position of each row's last kept token
        if feedback.path is not None:
            for row, n in enumerate(feedback.num_accepted.tolist()):
                if n:
                    anchors[row] = int(feedback.path[row, n - 1]) + 1
        first = 1 + nodes + anchors * masks
        index = (first[:, None] + torch.arange(masks)[None]).to(logits.device)
        self.mask_logits = logits.gather(1, index[..., None].expand(-1, -1, logits.shape[-1]))

    def admit(self, prompts: Sequence[Sequence[int]], prefill: ExtendOutput | None) -> None:
        """Newcomers have no mask outputs until their first pass: zeros, whose drafts the target
        rejects (one step without a useful guess; the reserved prefix reaches them with the engine)."""
        if self.mask_logits is not None:
            pad = self.mask_logits.new_zeros(len(prompts), *self.mask_logits.shape[1:])
            self.mask_logits = torch.cat([self.mask_logits, pad])

    def select_rows(self, rows: torch.Tensor) -> None:
        if self.mask_logits is not None:
            self.mask_logits = self.mask_logits[rows.to(self.mask_logits.device)]


TREE_SHAPE_FILE = "tree_shape.json"


def bita_folder(name_or_path: str) -> Path:
    """A BiTA adapter's folder: a path, or the name of one the package ships."""
    folder = Path(name_or_path)
    if not folder.is_dir() and name_or_path in (shipped := packaged_bitas()):
        return shipped[name_or_path]
    return folder


def default_tree_shape(folder: Path, target: PreTrainedModel) -> str:
    """The shape ``specdec eval bita`` measured fastest for this adapter on the kind of device the target
    is on. Unmeasured there: the paper's efficient tree (52 positions a block) where a wide block costs
    about one step (a GPU), else the top 2 of the first mask (a block of 6), fastest for the shipped
    adapter on the CPUs here (`benchmarks/BITA_2026-11-30.md`)."""
    device = next(target.parameters()).device.type
    chosen = folder / TREE_SHAPE_FILE
    if chosen.is_file():
        record = json.loads(chosen.read_text())
        measured_on = record.get("device") or (  # files from before the device was recorded
            "cpu" if record.get("machine", {}).get("gpu") is None else "cuda"
        )
        if measured_on == device:
            return record["shape"]
    return "efficient" if device == "cuda" else "2"


def chosen_tree_shape(folder: Path) -> str:
    """The tree shape ``specdec eval bita`` measured fastest for this adapter (acceptance × cost)."""
    chosen = folder / TREE_SHAPE_FILE
    if not chosen.is_file():
        raise InvalidArgumentError(
            f"bita[auto] needs {chosen}: run `specdec eval bita` for this adapter first"
        )
    return json.loads(chosen.read_text())["shape"]


def bita_drafter(spec: str, target: PreTrainedModel) -> BiTADrafter:
    """``bita:PATH`` or ``bita[SHAPE]:PATH``: the adapter at the shape asked for, else the measured one."""
    head, _, path = spec.partition(":")
    folder = bita_folder(path)
    adapter = BiTAAdapter.from_pretrained(folder)
    shape = head.removeprefix("bita").strip("[]")
    if shape == "auto":
        shape = chosen_tree_shape(folder)
    return BiTADrafter(adapter, shape or default_tree_shape(folder, target), name=spec)
