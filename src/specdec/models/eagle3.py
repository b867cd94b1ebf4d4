"""EAGLE-3 (Li et al., 2025): a one-layer draft head reading a fusion of three of the target's hidden states.

The head never sees text alone. Each of its inputs pairs a token with a feature: for a settled token
x_{i+1}, the target's hidden states at position i (the inputs of three target layers, low, middle and
high, concatenated and mapped to the head's width by ``fc``); for a token the head drafted itself, its
own pre-norm output at the previous position. One Llama decoder layer whose attention reads the two
side by side ([normed embedding ; normed feature], 2H wide) turns a pair into the next feature and,
through ``norm`` and ``lm_head``, the logits of the token after x_{i+1}. ``lm_head`` covers a draft
vocabulary (the target's most frequent tokens); ``d2t`` maps it back (target id = i + d2t[i]).

Module and tensor names are those of the ``speculators`` layout vLLM and SGLang load
(``fc``, ``layers.0.*`` with ``hidden_norm``, ``norm``, ``lm_head``, ``d2t``, ``t2d``); the target's
embedding is the target's own and is not stored. Built from transformers' Llama pieces (RMSNorm, MLP,
rotary embedding); only the 2H-wide attention input is EAGLE-3's own.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from specdec.engine.attention import grouped_attention
from specdec.errors import InvalidArgumentError


def default_aux_layers(num_layers: int) -> tuple[int, int, int]:
    """vLLM's default: the inputs of layers 2, L/2 and L−3 (hidden-state indices, 0 = embeddings)."""
    return (2, num_layers // 2, num_layers - 3)


@dataclass
class HeadOutput:
    logits: torch.Tensor  # [B, T, draft vocabulary] ([B, 1, ...] when the caller asks for one position a row)
    prenorm: torch.Tensor  # [B, T, H]: the feature the next drafted position reads
    keys: torch.Tensor  # [B, kv heads, T, head dim] of these positions (rotated), for the caller's cache
    values: torch.Tensor


class Eagle3Attention(nn.Module):
    """Llama attention whose queries, keys and values read 2H inputs."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        width = 2 * config.hidden_size
        self.q_proj = nn.Linear(width, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(width, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(width, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, x, rotary, mask, past) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch, width, _ = x.shape
        q = self.q_proj(x).view(batch, width, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, width, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, width, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, *rotary)
        keys, values = (k, v) if past is None else (torch.cat([past[0], k], 2), torch.cat([past[1], v], 2))
        # each key/value head read in place by its group of query heads: repeat_kv copied the whole context
        # per query head per call (a head call at 16 rows of 600 pairs: 41.6 -> 15.5 ms, CAMPAIGN.md)
        out = grouped_attention(q, keys, values, mask)
        return self.o_proj(out.transpose(1, 2).reshape(batch, width, -1)), k, v


class Eagle3Layer(nn.Module):
    def __init__(self, config: LlamaConfig, norm_before_residual: bool):
        super().__init__()
        self.norm_before_residual = norm_before_residual
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.hidden_norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Eagle3Attention(config)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = LlamaMLP(config)

    def forward(self, embeds, hidden, rotary, mask, past):
        normed = self.hidden_norm(hidden)
        residual = normed if self.norm_before_residual else hidden
        x = torch.cat([self.input_layernorm(embeds), normed], dim=-1)
        attended, k, v = self.self_attn(x, rotary, mask, past)
        residual = residual + attended
        return residual + self.mlp(self.post_attention_layernorm(residual)), k, v


class Eagle3Head(nn.Module):
    """The head for a target with ``config.vocab_size`` tokens reading hidden-state indices ``aux_layers``.

    ``draft_ids`` (ascending target ids) is the draft vocabulary ``lm_head`` covers (None: all of it).
    """

    def __init__(
        self,
        config: LlamaConfig,
        aux_layers: Sequence[int],
        target_hidden_size: int,
        draft_ids: torch.Tensor | None = None,
        norm_before_residual: bool = False,
    ):
        super().__init__()
        if len(aux_layers) != 3 or config.num_hidden_layers != 1:
            raise InvalidArgumentError(
                f"an EAGLE-3 head is one layer reading three target layers, got {config.num_hidden_layers} "
                f"layers reading {list(aux_layers)}"
            )
        draft_ids = (
            torch.arange(config.vocab_size) if draft_ids is None else torch.as_tensor(draft_ids).long()
        )
        if len(draft_ids) > 1 and not bool((draft_ids[1:] > draft_ids[:-1]).all()):
            raise InvalidArgumentError("the draft vocabulary's target ids must be ascending and distinct")
        if int(draft_ids.min()) < 0 or int(draft_ids.max()) >= config.vocab_size:
            raise InvalidArgumentError(f"draft vocabulary ids must lie in [0, {config.vocab_size})")
        self.config, self.aux_layers = config, tuple(int(h) for h in aux_layers)
        self.target_hidden_size, self.norm_before_residual = target_hidden_size, norm_before_residual
        self.fc = nn.Linear(3 * target_hidden_size, config.hidden_size, bias=False)
        self.layers = nn.ModuleList([Eagle3Layer(config, norm_before_residual)])
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, len(draft_ids), bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(config)
        trimmed = len(draft_ids) < config.vocab_size
        self.register_buffer("d2t", draft_ids - torch.arange(len(draft_ids)), persistent=trimmed)
        t2d = torch.zeros(config.vocab_size, dtype=torch.bool)
        self.register_buffer("t2d", t2d.index_fill_(0, draft_ids, True), persistent=trimmed)

    @property
    def dtype(self) -> torch.dtype:
        return self.norm.weight.dtype

    @property
    def draft_ids(self) -> torch.Tensor:
        return self.d2t + torch.arange(len(self.d2t), device=self.d2t.device)

    def fuse(self, hidden_states: dict[int, torch.Tensor]) -> torch.Tensor:
        """The target's hidden states at ``aux_layers``, ``[..., 3H_target]`` together, → the head's feature
        ``[..., H]``."""
        missing = [h for h in self.aux_layers if h not in hidden_states]
        if missing:
            raise InvalidArgumentError(
                f"the head reads target hidden states {list(self.aux_layers)}; missing {missing}"
            )
        return self.fc(torch.cat([hidden_states[h].to(self.dtype) for h in self.aux_layers], dim=-1))

    def forward(
        self,
        embeds: torch.Tensor,
        features: torch.Tensor,
        positions: torch.Tensor,
        mask: torch.Tensor | None,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
        last: torch.Tensor | None = None,
    ) -> HeadOutput:
        """``embeds`` / ``features`` ``[B, T, H]`` of T pairs at ``positions`` ``[B, T]``; ``mask``
        ``[B, 1, T, S + T]`` (True: may attend; None: everything) over ``past`` keys and values
        ``[B, kv heads, S, d]`` then the pairs themselves.

        ``last`` ``[B]``: logits only at row b's pair ``last[b]`` (``[B, 1, Vd]``). A drafter catching up
        on a prompt reads only its last pair's logits, and the output head over every pair is a fifth of
        a long prompt's pass (1,300 pairs: 0.07 of 0.33 s on a Cascade Lake Xeon)."""
        rotary = self.rotary_emb(features, positions)
        out, k, v = self.layers[0](embeds.to(features.dtype), features, rotary, mask, past)
        read = out
        if last is not None:
            read = out[torch.arange(len(out), device=out.device), last.to(out.device)][:, None]
        return HeadOutput(self.lm_head(self.norm(read)), out, k, v)

    def target_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """Draft-vocabulary logits ``[..., Vd]`` as target-vocabulary ones, −inf off the draft vocabulary
        (p = 0 there, so every verify rule stays exact)."""
        if logits.shape[-1] == self.config.vocab_size:
            return logits
        full = logits.new_full((*logits.shape[:-1], self.config.vocab_size), float("-inf"))
        return full.index_copy_(-1, self.draft_ids.to(logits.device), logits)


@torch.no_grad()
def widened(head: Eagle3Head, intermediate_size: int, seed: int = 0) -> Eagle3Head:
    """``head`` with an MLP of ``intermediate_size`` units, drafting exactly as before.

    Why: a head that agrees with the target as often on its training answers as on held-out ones
    underfits, and continuing it on more of the same data stopped moving; a wider MLP is more capacity
    in the layout vLLM and SGLang load (the width is ``intermediate_size`` in its config). The old units
    are kept; the new ones get random gate and up projections (the old ones' scale) and a zero down
    projection, so they add nothing until training moves them (net2wider with zero output weights).
    """
    mlp = head.layers[0].mlp
    old = mlp.gate_proj.out_features
    if intermediate_size <= old:
        raise InvalidArgumentError(
            f"the head's MLP has {old} units; widen it to more, got {intermediate_size}"
        )
    config = copy.deepcopy(head.config)
    config.intermediate_size = intermediate_size
    wide = Eagle3Head(
        config, head.aux_layers, head.target_hidden_size, head.draft_ids, head.norm_before_residual
    ).to(head.dtype)
    state = head.state_dict()
    generator = torch.Generator().manual_seed(seed)
    for name in ("gate_proj", "up_proj"):
        weight = state[f"layers.0.mlp.{name}.weight"]
        extra = (
            torch.randn(intermediate_size - old, weight.shape[1], generator=generator) * weight.float().std()
        )
        state[f"layers.0.mlp.{name}.weight"] = torch.cat([weight, extra.to(weight.dtype)])
    down = state["layers.0.mlp.down_proj.weight"]
    state["layers.0.mlp.down_proj.weight"] = torch.cat(
        [down, down.new_zeros(down.shape[0], intermediate_size - old)], 1
    )
    wide.load_state_dict(state)
    return wide.train(head.training)


@torch.no_grad()
def with_vocabulary(head: Eagle3Head, draft_ids: torch.Tensor, output_embeddings: torch.Tensor) -> Eagle3Head:
    """``head`` drafting over a wider vocabulary ``draft_ids`` (ascending target ids, a superset of its own).

    Why: a token outside the draft vocabulary is never proposed, so the vocabulary caps agreement (for
    SmolLM2, 2,048 tokens ranked on off-domain answers held 75 % of its greedy chat tokens, 8,499 ranked on
    chat answers hold 96 %). The old tokens keep their trained
    rows of ``lm_head``. A new token's row is the target's own output row for it (``output_embeddings``
    ``[V, H_target]``) through the linear map that best sends the old tokens' target rows to their trained
    rows (least squares): the head learned its output space from the target's, so the map carries what the
    target knows about the new tokens into it, instead of random rows that training would have to place.
    """
    old = head.draft_ids
    draft_ids = torch.as_tensor(draft_ids).long().to(old.device)
    if not bool(torch.isin(old, draft_ids).all()):
        raise InvalidArgumentError("a wider draft vocabulary keeps every token of the head's own")
    if len(draft_ids) <= len(old):
        raise InvalidArgumentError(
            f"the head drafts over {len(old)} tokens; widen it to more, got {len(draft_ids)}"
        )
    rows = output_embeddings.detach().float().to(old.device)
    trained = head.lm_head.weight.float()
    mapping = torch.linalg.lstsq(rows[old], trained).solution  # [H_target, H]: target row -> head row
    weight = rows[draft_ids] @ mapping
    weight[torch.searchsorted(draft_ids, old)] = trained
    wide = Eagle3Head(
        head.config, head.aux_layers, head.target_hidden_size, draft_ids.cpu(), head.norm_before_residual
    ).to(head.dtype)
    state = wide.state_dict()  # its own d2t and t2d (not saved when it covers the whole vocabulary)
    state |= {k: v for k, v in head.state_dict().items() if k not in ("lm_head.weight", "d2t", "t2d")}
    state["lm_head.weight"] = weight.to(head.dtype)
    wide.load_state_dict(state)
    return wide.train(head.training)
