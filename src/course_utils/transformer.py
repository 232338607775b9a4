"""11장 트랜스포머: attention is all you need (Vaswani et al., 2017), from scratch.

Each piece is a small function or module with the shapes in its docstring,
and each equals its ``torch.nn`` twin when the weights are copied
(:func:`load_torch_weights`): :func:`attention` equals
``F.scaled_dot_product_attention``, :class:`MultiHeadAttention`
``nn.MultiheadAttention``, :class:`LayerNorm` ``nn.LayerNorm``,
:class:`EncoderLayer` / :class:`DecoderLayer` ``nn.TransformerEncoderLayer`` /
``nn.TransformerDecoderLayer`` and :class:`Transformer` ``nn.Transformer``.

Masks follow ``nn.MultiheadAttention`` and ``nn.Transformer``: a bool mask is
True at the positions to *ignore*, a float mask is *added* to the scores.
``F.scaled_dot_product_attention`` reads a bool mask the other way round (True
means "attend"): pass it ``~mask``. Either way a masked position gets −∞ added
before the softmax, so its weight is exactly zero; a row with nothing left to
attend to is an error, never a silent NaN.

:class:`TransformerSeq2Seq` speaks 9장's encoder-decoder protocol
(:class:`course_utils.seq2seq.EncoderDecoder`), so 9장's training loop, greedy
decoding and beam search run it unchanged; its decoder keeps a key/value cache
so that each new token costs one position, not the whole prefix.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.attention import ModelRun, alignment_accuracy, new_bahdanau, score_model_run
from course_utils.device import seed_everything
from course_utils.seq2seq import (
    EOS,
    PAD,
    SOS,
    EncoderDecoder,
    Memory,
    ParallelData,
    State,
    TranslationConfig,
    _allowed_log_probs,
    _check_source,
    make_batch,
    sequence_loss,
    train_in_parallel,
    train_model,
)
from course_utils.translation_data import Pair, Splits

__all__ = [
    "ACTIVATIONS",
    "PAPER_SIZES",
    "PAPER_VOCAB_SIZE",
    "TRANSFORMER_VARIANTS",
    "WARMUP_STEPS",
    "CacheTiming",
    "CostRow",
    "DecoderLayer",
    "EncoderLayer",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "ScaleRow",
    "SinusoidalPositionalEncoding",
    "Transformer",
    "TransformerDecoder",
    "TransformerEncoder",
    "TransformerSeq2Seq",
    "TransformerSize",
    "attention",
    "attention_maps",
    "attention_vs_lstm_cost",
    "cache_mode",
    "causal_mask",
    "crossover",
    "decode_steps",
    "epoch_seconds",
    "gradient_norms_at_init",
    "head_alignment_accuracy",
    "load_state_dict_strict",
    "load_torch_weights",
    "merge_heads",
    "new_transformer",
    "position_shift_matrix",
    "run_transformer_comparison",
    "sinusoidal_table",
    "split_heads",
    "time_kv_cache",
    "torch_parameter_count",
    "torch_state_dict_to_ours",
    "transformer_parameter_count",
    "transformer_size",
    "why_scale",
]


# ---------------------------------------------------------------------------
# Scaled dot-product attention
# ---------------------------------------------------------------------------


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(T, T) bool, True above the diagonal: position t may not look at t + 1, t + 2, …"""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be an int >= 1, got {size!r}")
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(1)


def _mask_as_bias(mask: torch.Tensor, dtype: torch.dtype, name: str) -> torch.Tensor:
    """A bool mask (True = ignore) as 0/−∞, a float mask as it is: both are added to scores."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a bool or float tensor, got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
        return zeros.masked_fill(mask, -math.inf)
    if not mask.is_floating_point():
        raise TypeError(
            f"{name} must be bool (True = ignore) or float (added to the scores), got {mask.dtype}"
        )
    return mask.to(dtype)


def _check_rows_attend(bias: torch.Tensor) -> None:
    if bool(torch.isneginf(bias).all(dim=-1).any()):
        raise ValueError(
            "the mask hides every key from some query (a whole row is −∞): "
            "its softmax would be NaN; give every query at least one position to attend to"
        )


def attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q Kᵀ / √d_k + M) V → (output (…, T, d_v), weights (…, T, S)).

    ``query`` (…, T, d_k), ``key`` (…, S, d_k), ``value`` (…, S, d_v);
    ``attn_mask`` broadcasts to (…, T, S): bool True = ignore (as in
    ``nn.MultiheadAttention``; ``F.scaled_dot_product_attention`` wants ``~mask``)
    or float, added to the scores.
    """
    if not all(isinstance(t, torch.Tensor) and t.dim() >= 2 for t in (query, key, value)):
        raise ValueError(
            "query, key and value must be tensors shaped (…, T, d_k), (…, S, d_k), (…, S, d_v)"
        )
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"query (…, T, d_k) and key (…, S, d_k) need one d_k, and value (…, S, d_v) key's S; "
            f"got query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        )
    try:
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (…, T, S)
    except RuntimeError:
        raise ValueError(
            f"the leading (batch, head) dimensions of query {tuple(query.shape)} and key "
            f"{tuple(key.shape)} do not broadcast"
        ) from None
    if attn_mask is not None:
        bias = _mask_as_bias(attn_mask, scores.dtype, "attn_mask")
        try:
            torch.broadcast_shapes(bias.shape, scores.shape)
        except RuntimeError:
            raise ValueError(
                f"attn_mask {tuple(bias.shape)} does not broadcast to the scores (…, T, S) = "
                f"{tuple(scores.shape)}"
            ) from None
        _check_rows_attend(bias)
        scores = scores + bias
    weights = torch.softmax(scores, dim=-1)  # (…, T, S); a masked position gets exactly 0
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights  # (…, T, d_v), (…, T, S)


# ---------------------------------------------------------------------------
# Multi-head attention
# ---------------------------------------------------------------------------


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, d_model) → (B, h, T, d_k): head i gets features i·d_k … (i+1)·d_k − 1."""
    B, T, D = x.shape
    if D % num_heads:
        raise ValueError(f"d_model = {D} is not divisible by num_heads = {num_heads}")
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, T, d_k) → (B, T, h·d_k): the heads' outputs side by side (Concat in the paper)."""
    B, h, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_k)


class MultiHeadAttention(nn.Module):
    """h heads of :func:`attention`, each on its own d_k = d_model / h projection.

    Head i projects with W_i^Q, W_i^K, W_i^V (d_model × d_k each). Stacked side
    by side they form one d_model × d_model matrix per role, so ``q_proj`` (and
    ``k_proj``, ``v_proj``) computes every head's projection in one product and
    :func:`split_heads` cuts the result into heads. ``nn.MultiheadAttention``
    stacks the three again, into one ``in_proj_weight`` (3·d_model × d_model).
    The arguments and the return value are ``nn.MultiheadAttention``'s.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        batch_first: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim (d_model) = {embed_dim} must be divisible by num_heads = {num_heads}: "
                "each head gets d_k = d_model / num_heads features"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads  # d_k
        self.batch_first = batch_first
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # every head's W^Q, stacked
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # W^O
        self.dropout = nn.Dropout(dropout)

    def project_key_value(
        self, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch-first (B, S, d_model) keys and values → per-head (B, h, S, d_k) each."""
        return (
            split_heads(self.k_proj(key), self.num_heads),
            split_heads(self.v_proj(value), self.num_heads),
        )

    def attend(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch-first query (B, T, d_model) against projected (B, h, S, d_k) keys and values.

        → output (B, T, d_model), per-head weights (B, h, T, S).
        """
        q = split_heads(self.q_proj(query), self.num_heads)  # (B, h, T, d_k)
        heads, weights = attention(q, keys, values, bias, self.dropout)  # (B, h, T, d_k)
        return self.out_proj(merge_heads(heads)), weights  # (B, T, d_model)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(output, weights) as ``nn.MultiheadAttention``.

        Inputs (B, T, d_model) if ``batch_first`` else (T, B, d_model);
        ``key_padding_mask`` (B, S); ``attn_mask`` (T, S) or (B·h, T, S). Weights
        (B, T, S) averaged over the heads, or (B, h, T, S) with
        ``average_attn_weights=False``.
        """
        self._check_inputs(query, key, value)  # as passed in, before any transpose
        if not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        B, T, S = query.shape[0], query.shape[1], key.shape[1]
        bias = self._bias(key_padding_mask, attn_mask, B, T, S, query.dtype)
        keys, values = self.project_key_value(key, value)  # (B, h, S, d_k) each
        output, weights = self.attend(query, keys, values, bias)
        if not self.batch_first:
            output = output.transpose(0, 1)  # (T, B, d_model)
        if not need_weights:
            return output, None
        return output, weights.mean(dim=1) if average_attn_weights else weights

    def _check_inputs(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        layout = "(B, T, d_model)" if self.batch_first else "(T, B, d_model)"
        for name, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.embed_dim:
                got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(
                    f"{name} must be {layout} with d_model = {self.embed_dim}, got {got}"
                )
        b = 0 if self.batch_first else 1  # the batch axis; the other one is T or S
        if (
            not query.shape[b] == key.shape[b] == value.shape[b]
            or key.shape[1 - b] != value.shape[1 - b]
        ):
            raise ValueError(
                f"query, key and value need one batch size B, and key and value one length S; "
                f"got {tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)} {layout}"
            )

    def _bias(
        self,
        key_padding_mask: torch.Tensor | None,
        attn_mask: torch.Tensor | None,
        B: int,
        T: int,
        S: int,
        dtype: torch.dtype,
    ) -> torch.Tensor | None:
        """Both masks as one additive (B or 1, h or 1, T or 1, S) bias, or None."""
        bias = None
        for name, mask in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if mask is not None and not isinstance(mask, torch.Tensor):
                raise TypeError(f"{name} must be a bool or float tensor, got {type(mask).__name__}")
        if key_padding_mask is not None:
            if key_padding_mask.shape != (B, S):
                raise ValueError(
                    f"key_padding_mask must be (B, S) = ({B}, {S}), True at the keys to ignore; "
                    f"got {tuple(key_padding_mask.shape)}"
                )
            bias = _mask_as_bias(key_padding_mask, dtype, "key_padding_mask").view(B, 1, 1, S)
        if attn_mask is not None:
            h = self.num_heads
            if attn_mask.shape == (T, S):
                mask = _mask_as_bias(attn_mask, dtype, "attn_mask").view(1, 1, T, S)
            elif attn_mask.shape == (B * h, T, S):
                mask = _mask_as_bias(attn_mask, dtype, "attn_mask").view(B, h, T, S)
            else:
                raise ValueError(
                    f"attn_mask must be (T, S) = ({T}, {S}) or (B·h, T, S) = ({B * h}, {T}, {S}), "
                    f"got {tuple(attn_mask.shape)}"
                )
            bias = mask if bias is None else bias + mask
        return bias


# ---------------------------------------------------------------------------
# Layer normalisation, positions
# ---------------------------------------------------------------------------


class LayerNorm(nn.Module):
    """Normalise each position's d_model features to mean 0, variance 1, then scale and shift.

    The statistics come from one position of one example, never from the
    batch (unlike batch normalisation), so an example's output does not
    depend on what else is in the batch.
    """

    def __init__(self, normalized_shape: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(normalized_shape))  # γ
        self.bias = nn.Parameter(torch.zeros(normalized_shape))  # β

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.weight.shape[0]:
            raise ValueError(
                f"LayerNorm expects (…, {self.weight.shape[0]}) features, got {tuple(x.shape)}"
            )
        centered = x - x.mean(dim=-1, keepdim=True)  # (…, d_model): x − μ
        variance = (centered * centered).mean(
            dim=-1, keepdim=True
        )  # (…, 1): σ², divided by d_model
        return centered / torch.sqrt(variance + self.eps) * self.weight + self.bias


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model): PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(…)."""
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin and cos pairs), got {d_model}")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    frequency = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table.float()


def position_shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """(d_model, d_model) R_k with PE(pos + k) = R_k PE(pos) for every pos: a rotation per pair."""
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin and cos pairs), got {d_model}")
    frequency = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    cos, sin = torch.cos(k * frequency), torch.sin(k * frequency)
    matrix = torch.zeros(d_model, d_model, dtype=torch.float64)
    even = torch.arange(0, d_model, 2)
    # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b − sin a sin b
    matrix[even, even], matrix[even, even + 1] = cos, sin
    matrix[even + 1, even], matrix[even + 1, even + 1] = -sin, cos
    return matrix


def _check_positions(length: int, offset: int, max_len: int) -> None:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0 (the first position), got {offset!r}")
    if offset + length > max_len:
        raise ValueError(
            f"positions {offset}..{offset + length - 1} exceed the position table of "
            f"max_len = {max_len}; build the model with a larger max_len"
        )


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table: x (B, T, d_model) → x + PE[offset : offset + T]."""

    table: torch.Tensor

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.max_len = max_len
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_positions(x.shape[1], offset, self.max_len)
        return x + self.table[offset : offset + x.shape[1]]


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained vector per position (BERT, GPT): only positions seen in training learn."""

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_positions(x.shape[1], offset, self.max_len)
        return x + self.embedding.weight[offset : offset + x.shape[1]]


# ---------------------------------------------------------------------------
# Encoder and decoder layers
# ---------------------------------------------------------------------------

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class _Sublayers(nn.Module):
    """What both layers share: the feed-forward block and the residual rule."""

    norm_first: bool

    def _init_feed_forward(
        self, d_model: int, dim_feedforward: int, dropout: float, activation: str
    ) -> None:
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}"
            )
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation_name = activation
        self.activation = ACTIVATIONS[activation]

    def extra_repr(self) -> str:
        # Shown by repr(model), which 9장's training cache uses as part of its key.
        return f"activation={self.activation_name}, norm_first={self.norm_first}"

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """FFN(x) = W_2 act(W_1 x + b_1) + b_2, position by position: (B, T, d) → (B, T, d)."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))

    def residual(
        self,
        x: torch.Tensor,
        sublayer: Callable[[torch.Tensor], torch.Tensor],
        norm: nn.Module,
        dropout: nn.Module,
    ) -> torch.Tensor:
        """Post-norm LayerNorm(x + Sublayer(x)) (paper) or pre-norm x + Sublayer(LayerNorm(x))."""
        if self.norm_first:
            return x + dropout(sublayer(norm(x)))
        return norm(x + dropout(sublayer(x)))


def _check_d_model(d_model: int, nhead: int) -> None:
    for name, value in (("d_model", d_model), ("nhead", nhead)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if d_model % nhead:
        raise ValueError(
            f"d_model = {d_model} must be divisible by nhead = {nhead}: "
            "each head gets d_k = d_model / nhead features"
        )


class EncoderLayer(_Sublayers):
    """Self-attention → feed-forward, each inside a residual connection with LayerNorm.

    ``nn.TransformerEncoderLayer`` with ``batch_first=True`` (always here):
    same arguments, same parameter names. The last per-head self-attention
    weights (B, h, T, T) are kept in ``attention_weights`` for plotting.
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        _check_d_model(d_model, nhead)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, batch_first=True)
        self._init_feed_forward(d_model, dim_feedforward, dropout, activation)
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.attention_weights: torch.Tensor | None = None

    def self_attention(
        self, x: torch.Tensor, mask: torch.Tensor | None, key_padding_mask: torch.Tensor | None
    ) -> torch.Tensor:
        out, weights = self.self_attn(
            x, x, x, key_padding_mask, attn_mask=mask, average_attn_weights=False
        )
        self.attention_weights = None if weights is None else weights.detach()
        return out

    def forward(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        src_key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """src (B, S, d_model) → (B, S, d_model)."""
        x = self.residual(
            src,
            lambda y: self.self_attention(y, src_mask, src_key_padding_mask),
            self.norm1,
            self.dropout1,
        )
        return self.residual(x, self.feed_forward, self.norm2, self.dropout2)


class DecoderLayer(_Sublayers):
    """Masked self-attention → cross-attention on the encoder's memory → feed-forward.

    ``nn.TransformerDecoderLayer`` with ``batch_first=True``: same arguments,
    same parameter names. Keeps the last per-head weights of both attentions in
    ``self_attention_weights`` (B, h, T, T) and ``cross_attention_weights`` (B, h, T, S).
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        _check_d_model(d_model, nhead)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout, batch_first=True)
        self.multihead_attn = MultiHeadAttention(d_model, nhead, dropout, batch_first=True)
        self._init_feed_forward(d_model, dim_feedforward, dropout, activation)
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.norm3 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.self_attention_weights: torch.Tensor | None = None
        self.cross_attention_weights: torch.Tensor | None = None

    def _attend(
        self,
        module: MultiHeadAttention,
        x: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        bias: torch.Tensor | None,
        slot: str,
    ) -> torch.Tensor:
        out, weights = module.attend(x, keys, values, bias)
        setattr(self, slot, weights.detach())
        return out

    def forward(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        tgt_key_padding_mask: torch.Tensor | None = None,
        memory_key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """tgt (B, T, d_model), memory (B, S, d_model) → (B, T, d_model)."""
        B, T, S = tgt.shape[0], tgt.shape[1], memory.shape[1]
        self_bias = self.self_attn._bias(tgt_key_padding_mask, tgt_mask, B, T, T, tgt.dtype)
        cross_bias = self.multihead_attn._bias(
            memory_key_padding_mask, memory_mask, B, T, S, tgt.dtype
        )

        def self_attention(y: torch.Tensor) -> torch.Tensor:
            keys, values = self.self_attn.project_key_value(y, y)  # (B, h, T, d_k) each
            return self._attend(
                self.self_attn, y, keys, values, self_bias, "self_attention_weights"
            )

        def cross_attention(y: torch.Tensor) -> torch.Tensor:
            keys, values = self.multihead_attn.project_key_value(memory, memory)  # (B, h, S, d_k)
            return self._attend(
                self.multihead_attn, y, keys, values, cross_bias, "cross_attention_weights"
            )

        x = self.residual(tgt, self_attention, self.norm1, self.dropout1)
        x = self.residual(x, cross_attention, self.norm2, self.dropout2)
        return self.residual(x, self.feed_forward, self.norm3, self.dropout3)

    def step(
        self,
        x: torch.Tensor,
        cache: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
        memory_bias: torch.Tensor | None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """One new position x (B, 1, d_model) with the key/value cache → (B, 1, d_model), cache.

        ``cache`` holds the self-attention keys and values of the positions
        before, (B, h, t, d_k) each, and the memory's cross-attention keys and
        values, (B, h, S, d_k) each, projected once per sentence. The new
        position sees only the past, so no causal mask is needed.
        """
        past_keys, past_values, memory_keys, memory_values = cache
        new_cache = cache

        def self_attention(y: torch.Tensor) -> torch.Tensor:
            nonlocal new_cache
            key, value = self.self_attn.project_key_value(y, y)  # (B, h, 1, d_k) each
            keys = torch.cat([past_keys, key], dim=2)  # (B, h, t + 1, d_k)
            values = torch.cat([past_values, value], dim=2)
            new_cache = (keys, values, memory_keys, memory_values)
            return self._attend(self.self_attn, y, keys, values, None, "self_attention_weights")

        def cross_attention(y: torch.Tensor) -> torch.Tensor:
            return self._attend(
                self.multihead_attn,
                y,
                memory_keys,
                memory_values,
                memory_bias,
                "cross_attention_weights",
            )

        x = self.residual(x, self_attention, self.norm1, self.dropout1)
        x = self.residual(x, cross_attention, self.norm2, self.dropout2)
        return self.residual(x, self.feed_forward, self.norm3, self.dropout3), new_cache


@dataclass(frozen=True)
class TransformerSize:
    """The sizes of an encoder-decoder Transformer (the paper's names)."""

    d_model: int = 512
    nhead: int = 8  # h
    num_encoder_layers: int = 6  # N
    num_decoder_layers: int = 6
    dim_feedforward: int = 2048  # d_ff
    dropout: float = 0.1
    activation: str = "relu"
    layer_norm_eps: float = 1e-5
    norm_first: bool = False  # False: post-norm as in the paper; True: pre-norm


class TransformerEncoder(nn.Module):
    """N encoder layers and a final LayerNorm, as ``nn.TransformerEncoder``."""

    def __init__(self, size: TransformerSize) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(
                size.d_model,
                size.nhead,
                size.dim_feedforward,
                size.dropout,
                size.activation,
                size.layer_norm_eps,
                size.norm_first,
            )
            for _ in range(size.num_encoder_layers)
        )
        self.norm = LayerNorm(size.d_model, size.layer_norm_eps)

    def forward(
        self,
        src: torch.Tensor,
        mask: torch.Tensor | None = None,
        src_key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """src (B, S, d_model) → memory (B, S, d_model)."""
        for layer in self.layers:
            src = layer(src, mask, src_key_padding_mask)
        return self.norm(src)


class TransformerDecoder(nn.Module):
    """N decoder layers and a final LayerNorm, as ``nn.TransformerDecoder``."""

    def __init__(self, size: TransformerSize) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(
                size.d_model,
                size.nhead,
                size.dim_feedforward,
                size.dropout,
                size.activation,
                size.layer_norm_eps,
                size.norm_first,
            )
            for _ in range(size.num_decoder_layers)
        )
        self.norm = LayerNorm(size.d_model, size.layer_norm_eps)

    def forward(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        tgt_key_padding_mask: torch.Tensor | None = None,
        memory_key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """tgt (B, T, d_model), memory (B, S, d_model) → (B, T, d_model)."""
        for layer in self.layers:
            tgt = layer(
                tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask
            )
        return self.norm(tgt)


def _weights(weights: torch.Tensor | None) -> torch.Tensor:
    if weights is None:
        raise RuntimeError("no attention weights yet: run the layer first")
    return weights


class Transformer(nn.Module):
    """Encoder stack + decoder stack, as ``nn.Transformer(batch_first=True)``.

    Like ``nn.Transformer``, each stack ends with a LayerNorm, also in the
    post-norm arrangement where the paper has none (one more LayerNorm with
    its own γ and β, close to the identity at initialisation).
    """

    def __init__(self, size: TransformerSize = TransformerSize()) -> None:
        super().__init__()
        _check_d_model(size.d_model, size.nhead)
        self.size = size
        self.encoder = TransformerEncoder(size)
        self.decoder = TransformerDecoder(size)

    def encoder_layers(self) -> list[EncoderLayer]:
        """The encoder's layers, typed."""
        return [cast(EncoderLayer, layer) for layer in self.encoder.layers]

    def decoder_layers(self) -> list[DecoderLayer]:
        """The decoder's layers, typed."""
        return [cast(DecoderLayer, layer) for layer in self.decoder.layers]

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        src_key_padding_mask: torch.Tensor | None = None,
        tgt_key_padding_mask: torch.Tensor | None = None,
        memory_key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """src (B, S, d_model), tgt (B, T, d_model) → (B, T, d_model)."""
        memory = self.encoder(src, src_mask, src_key_padding_mask)
        return self.decoder(
            tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask
        )


# ---------------------------------------------------------------------------
# Loading torch's weights
# ---------------------------------------------------------------------------


def torch_state_dict_to_ours(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``nn.MultiheadAttention``'s packed ``in_proj_weight`` (3·d × d) → our q/k/v projections.

    Every other name is the same in both, by design.
    """
    ours: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        prefix, _, last = name.rpartition(".")
        head = f"{prefix}." if prefix else ""
        if last in ("in_proj_weight", "in_proj_bias"):
            kind = "weight" if last == "in_proj_weight" else "bias"
            for role, part in zip(("q", "k", "v"), tensor.chunk(3, dim=0), strict=True):
                ours[f"{head}{role}_proj.{kind}"] = part
        else:
            ours[name] = tensor
    return ours


def load_torch_weights(ours: nn.Module, theirs: nn.Module | dict[str, torch.Tensor]) -> None:
    """Copy a ``torch.nn`` module's weights (or its state dict) into our twin, strictly.

    Raises ValueError naming every missing, unexpected or mis-shaped weight.
    """
    state = theirs.state_dict() if isinstance(theirs, nn.Module) else theirs
    load_state_dict_strict(ours, torch_state_dict_to_ours(state))


def load_state_dict_strict(module: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """``module.load_state_dict`` with one clear error naming every mismatch."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = [
        f"{name}: expected {tuple(expected[name].shape)}, got {tuple(state[name].shape)}"
        for name in sorted(set(expected) & set(state))
        if expected[name].shape != state[name].shape
    ]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            shown = [f"{name} {tuple(expected[name].shape)}" for name in missing[:8]]
            parts.append(f"missing {', '.join(shown)}{' …' if len(missing) > 8 else ''}")
        if unexpected:
            parts.append(
                f"unexpected {', '.join(unexpected[:8])}{' …' if len(unexpected) > 8 else ''}"
            )
        if shapes:
            parts.append("shape mismatch " + "; ".join(shapes[:8]))
        raise ValueError(f"weights do not fit {type(module).__name__}: " + " | ".join(parts))
    module.load_state_dict(state)


# ---------------------------------------------------------------------------
# The translation model
# ---------------------------------------------------------------------------


class TransformerSeq2Seq(EncoderDecoder):
    """Embeddings × √d_model + positions → :class:`Transformer` → a linear layer to the vocabulary.

    Speaks 9장's protocol. ``use_cache`` picks how :meth:`step` decodes: with a
    key/value cache (each step runs one new position through the decoder) or
    without (each step runs the whole prefix again and keeps the last position).
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        size: TransformerSize,
        max_len: int = 256,
        learned_positions: bool = False,
    ) -> None:
        super().__init__()
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.d_model = size.d_model
        self.source_embedding = nn.Embedding(source_vocab_size, size.d_model, padding_idx=PAD)
        self.target_embedding = nn.Embedding(target_vocab_size, size.d_model, padding_idx=PAD)
        positions = (
            LearnedPositionalEmbedding if learned_positions else SinusoidalPositionalEncoding
        )
        self.positions = positions(size.d_model, max_len)
        self.dropout = nn.Dropout(size.dropout)
        self.transformer = Transformer(size)
        self.output = nn.Linear(size.d_model, target_vocab_size)
        self.use_cache = True
        for name, parameter in self.named_parameters():
            if name.startswith("transformer.") and parameter.dim() > 1:
                nn.init.xavier_uniform_(parameter)  # as nn.Transformer initialises itself
        for embedding in (self.source_embedding, self.target_embedding):
            # std 1/√d_model, so that × √d_model gives unit-size vectors beside the positions
            nn.init.normal_(embedding.weight, std=size.d_model**-0.5)
            embedding.weight.data[PAD] = 0.0

    def _embed(
        self, embedding: nn.Embedding, tokens: torch.Tensor, offset: int = 0
    ) -> torch.Tensor:
        x = embedding(tokens) * math.sqrt(self.d_model)  # (B, T, d_model), paper §3.4
        return self.dropout(self.positions(x, offset))

    def encode(self, source: torch.Tensor, source_lengths: torch.Tensor) -> Memory:
        _check_source(source, source_lengths, self.source_vocab_size)
        padding = source == PAD  # (B, S)
        outputs = self.transformer.encoder(
            self._embed(self.source_embedding, source), src_key_padding_mask=padding
        )  # (B, S, d_model)
        real = (~padding).unsqueeze(-1).to(outputs.dtype)  # (B, S, 1)
        context = (outputs * real).sum(1) / real.sum(1)  # (B, d_model): mean of the real positions
        return Memory(outputs, padding, context)

    def decode(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        """Every target position at once under the causal mask: (B, T) → hidden (B, T, d_model)."""
        T = target_in.shape[1]
        return self.transformer.decoder(
            self._embed(self.target_embedding, target_in),
            memory.outputs,
            tgt_mask=causal_mask(T, target_in.device),
            memory_key_padding_mask=memory.padding_mask,
        )

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        # Target pads sit after <eos>: the causal mask keeps every real position from
        # seeing them, and the loss ignores the pad positions themselves.
        return self.output(self.decode(target_in, memory))  # (B, T, V)

    def init_state(self, memory: Memory) -> State:
        B = memory.outputs.shape[0]
        if not self.use_cache:
            return (torch.empty(B, 0, dtype=torch.long, device=memory.outputs.device),)
        state: list[torch.Tensor] = []
        for layer in self.transformer.decoder_layers():
            keys, values = layer.multihead_attn.project_key_value(memory.outputs, memory.outputs)
            empty = keys[:, :, :0]  # (B, h, 0, d_k): no past positions yet
            state += [empty, empty, keys, values]
        return tuple(state)

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        """Logits (B, V) for the position after the prefix; weights: last layer's cross-attention.

        With the cache the state is four tensors per layer (see
        :meth:`DecoderLayer.step`); without, it is the prefix (B, t) itself.
        """
        decoder = self.transformer.decoder
        if not self.use_cache:
            prefix = torch.cat([state[0], tokens.unsqueeze(1)], dim=1)  # (B, t + 1)
            hidden = self.decode(prefix, memory)[:, -1]  # (B, d_model)
            weights = _weights(self.transformer.decoder_layers()[-1].cross_attention_weights)
            weights = weights[:, :, -1]  # (B, h, S)
            return self.output(hidden), (prefix,), weights.mean(1)
        t = state[0].shape[2]  # positions decoded so far
        x = self._embed(self.target_embedding, tokens.unsqueeze(1), offset=t)  # (B, 1, d_model)
        bias = _mask_as_bias(memory.padding_mask, x.dtype, "padding_mask")[:, None, None, :]
        new_state: list[torch.Tensor] = []
        for i, layer in enumerate(self.transformer.decoder_layers()):
            past = state[4 * i : 4 * i + 4]
            x, cache = layer.step(x, (past[0], past[1], past[2], past[3]), bias)
            new_state += cache
        hidden = decoder.norm(x)[:, 0]  # (B, d_model)
        weights = _weights(self.transformer.decoder_layers()[-1].cross_attention_weights)
        weights = weights[:, :, 0]  # (B, h, S)
        return self.output(hidden), tuple(new_state), weights.mean(1)


@torch.no_grad()
def decode_steps(
    model: TransformerSeq2Seq,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    steps: int,
) -> torch.Tensor:
    """Exactly ``steps`` greedy tokens (never stopping at ``<eos>``): (B, steps) ids.

    For measuring decoding cost at a fixed output length; the chapters'
    translations use :func:`course_utils.seq2seq.greedy_decode`.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    model.eval()
    memory = model.encode(source, source_lengths)
    state = model.init_state(memory)
    tokens = torch.full((source.shape[0],), SOS, device=source.device)
    out = []
    for _ in range(steps):
        logits, state, _ = model.step(tokens, state, memory)
        tokens = _allowed_log_probs(logits).argmax(-1)  # (B,)
        out.append(tokens)
    return torch.stack(out, dim=1)  # (B, steps)


@contextmanager
def cache_mode(model: TransformerSeq2Seq, use_cache: bool) -> Iterator[None]:
    """Temporarily decode with or without the key/value cache."""
    before = model.use_cache
    model.use_cache = use_cache
    try:
        yield
    finally:
        model.use_cache = before


# ---------------------------------------------------------------------------
# Experiments of 11장
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScaleRow:
    """Scores q·k of random unit-variance vectors, with and without the 1/√d_k scale."""

    d_k: int
    variance: float  # Var(q·k): grows like d_k
    scaled_variance: float  # Var(q·k / √d_k): stays near 1
    max_weight: float  # mean largest softmax weight over the keys, unscaled
    scaled_max_weight: float
    jacobian_norm: float  # mean ‖∂softmax/∂scores‖_F, unscaled: near 0 when saturated
    scaled_jacobian_norm: float


def _softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """‖diag(p) − p pᵀ‖_F for each row p of (N, S) weights → (N,)."""
    jacobian = torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)
    return jacobian.flatten(1).norm(dim=-1)


def why_scale(
    d_ks: Sequence[int] = (4, 16, 64, 256, 1024), keys: int = 16, samples: int = 2000, seed: int = 0
) -> list[ScaleRow]:
    """Why √d_k: q, k with independent N(0, 1) entries give Var(q·k) = d_k; softmax saturates."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for d_k in d_ks:
        q = torch.randn(samples, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(samples, keys, d_k, generator=generator, dtype=torch.float64)
        scores = (q @ k.transpose(1, 2)).squeeze(1)  # (N, keys)
        scaled = scores / math.sqrt(d_k)
        p, p_scaled = torch.softmax(scores, -1), torch.softmax(scaled, -1)
        rows.append(
            ScaleRow(
                d_k,
                float(scores.var()),
                float(scaled.var()),
                float(p.max(-1).values.mean()),
                float(p_scaled.max(-1).values.mean()),
                float(_softmax_jacobian_norm(p).mean()),
                float(_softmax_jacobian_norm(p_scaled).mean()),
            )
        )
    return rows


def transformer_parameter_count(
    size: TransformerSize, vocab_size: int, shared_embeddings: bool = True
) -> dict[str, int]:
    """Parameters of an encoder-decoder Transformer by formula, part by part.

    One multi-head attention has 4 d×d matrices and 4 biases; a feed-forward
    block 2 d×d_ff matrices and d_ff + d biases; a LayerNorm 2d. Embeddings:
    one vocab×d table shared by the source, the target and the output layer
    (paper §3.4), or three tables; the output layer has no bias. The two final
    LayerNorms are ``nn.Transformer``'s.
    """
    d, d_ff = size.d_model, size.dim_feedforward
    mha = 4 * d * d + 4 * d
    ffn = 2 * d * d_ff + d_ff + d
    norm = 2 * d
    counts = {
        "embeddings": vocab_size * d * (1 if shared_embeddings else 3),
        "encoder": size.num_encoder_layers * (mha + ffn + 2 * norm),
        "decoder": size.num_decoder_layers * (2 * mha + ffn + 3 * norm),
        "final_norms": 2 * norm,
    }
    counts["total"] = sum(counts.values())
    return counts


def torch_parameter_count(
    size: TransformerSize, vocab_size: int, shared_embeddings: bool = True
) -> int:
    """The same count from ``nn.Transformer`` and ``nn.Embedding`` built on the meta device."""
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        core = nn.Transformer(
            size.d_model,
            size.nhead,
            size.num_encoder_layers,
            size.num_decoder_layers,
            size.dim_feedforward,
            batch_first=True,
        )
        tables = [
            nn.Embedding(vocab_size, size.d_model) for _ in range(1 if shared_embeddings else 3)
        ]
    return sum(p.numel() for m in (core, *tables) for p in m.parameters())


PAPER_SIZES = {
    # Vaswani et al. (2017), Table 3; the 37,000-token vocabulary of §5.1 (English-German BPE)
    "base": TransformerSize(512, 8, 6, 6, 2048, 0.1),
    "big": TransformerSize(1024, 16, 6, 6, 4096, 0.3),
}
PAPER_VOCAB_SIZE = 37_000


def transformer_size(config: TranslationConfig, norm_first: bool = True) -> TransformerSize:
    """11장's Transformer for a translation config: d_model = H/2, 4 heads, 2 + 2 layers.

    d_ff = 4·d_model as in the paper; about as many parameters as 10장's
    attention models at the same config.
    """
    d_model = config.hidden_size // 2
    return TransformerSize(d_model, 4, 2, 2, 4 * d_model, 0.1, norm_first=norm_first)


def new_transformer(
    data: ParallelData,
    config: TranslationConfig,
    norm_first: bool = True,
    learned_positions: bool = False,
) -> TransformerSeq2Seq:
    """11장's model at the config's size, seeded by the config."""
    seed_everything(config.training.seed)
    return TransformerSeq2Seq(
        len(data.source_vocab),
        len(data.target_vocab),
        transformer_size(config, norm_first),
        learned_positions=learned_positions,
    )


def _post_norm(data: ParallelData, config: TranslationConfig) -> TransformerSeq2Seq:
    return new_transformer(data, config, norm_first=False)


def _learned_positions(data: ParallelData, config: TranslationConfig) -> TransformerSeq2Seq:
    return new_transformer(data, config, learned_positions=True)


WARMUP_STEPS = 100  # the post-norm variant's linear warm-up (the paper: 4,000 of 100,000 steps)

TRANSFORMER_VARIANTS: dict[
    str, tuple[Callable[[ParallelData, TranslationConfig], EncoderDecoder], int]
] = {
    # name: (model maker, warm-up steps)
    "pre_norm": (new_transformer, 0),
    "post_norm": (_post_norm, 0),
    "post_norm_warmup": (_post_norm, WARMUP_STEPS),
    "learned_positions": (_learned_positions, 0),
}


def _with_warmup(config: TranslationConfig, warmup_steps: int) -> TranslationConfig:
    return replace(config, training=replace(config.training, warmup_steps=warmup_steps))


def run_transformer_comparison(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    names: Sequence[str] = tuple(TRANSFORMER_VARIANTS),
    show_progress: bool = True,
) -> dict[str, ModelRun]:
    """Train the Transformer variants and 10장's Bahdanau model on 9장's data and budget.

    ``pre_norm`` (sinusoidal positions) is the chapter's model; ``post_norm``
    is the paper's arrangement, alone and with :data:`WARMUP_STEPS` of warm-up;
    ``learned_positions`` swaps the sinusoids for a trained table. Each is
    scored on the stratified test set by length (greedy decoding), with the
    last decoder layer's cross-attention (mean over heads) as its alignment.
    """
    unknown = [n for n in names if n not in TRANSFORMER_VARIANTS]
    if unknown:
        raise ValueError(
            f"unknown variant {unknown[0]!r}: expected some of {', '.join(TRANSFORMER_VARIANTS)}"
        )
    jobs = [
        (TRANSFORMER_VARIANTS[n][0], data, _with_warmup(config, TRANSFORMER_VARIANTS[n][1]))
        for n in names
    ]
    train_in_parallel([*jobs, (new_bahdanau, data, config)])  # a no-op on one core or a GPU
    runs = {}
    for name, (make, _, job_config) in zip(names, jobs, strict=True):
        model = make(data, job_config)
        history = train_model(model, data, job_config.training, show_progress)
        runs[name] = score_model_run(name, model, history, data, splits, True)
    model = new_bahdanau(data, config)
    history = train_model(model, data, config.training, show_progress)
    runs["bahdanau"] = score_model_run("bahdanau", model, history, data, splits, True)
    return runs


def gradient_norms_at_init(
    data: ParallelData,
    config: TranslationConfig,
    norm_first: bool,
    num_layers: int = 6,
    batches: int = 4,
) -> dict[str, list[float]]:
    """Gradient norm of each layer's parameters at initialisation (Xiong et al., 2020, Fig. 3).

    A Transformer of the chapter's width with ``num_layers`` encoder and
    decoder layers (6 as in the paper); mean over ``batches`` training batches
    of the loss's gradient norm per layer, before any update.
    """
    size = replace(
        transformer_size(config, norm_first),
        num_encoder_layers=num_layers,
        num_decoder_layers=num_layers,
    )
    seed_everything(config.training.seed)
    model = TransformerSeq2Seq(len(data.source_vocab), len(data.target_vocab), size)
    model.train()
    examples = data.examples("train")
    norms: dict[str, list[list[float]]] = {"encoder": [], "decoder": []}
    for i in range(batches):
        batch = make_batch(
            examples[i * config.training.batch_size : (i + 1) * config.training.batch_size]
        )
        model.zero_grad()
        logits = model(batch.source, batch.source_lengths, batch.target_in)
        sequence_loss(logits, batch.target_out).backward()
        for stack in ("encoder", "decoder"):
            layers = getattr(model.transformer, stack).layers
            norms[stack].append(
                [
                    float(torch.sqrt(sum((p.grad**2).sum() for p in layer.parameters())))
                    for layer in layers
                ]
            )
    return {
        stack: [statistics.mean(col) for col in zip(*rows, strict=True)]
        for stack, rows in norms.items()
    }


@dataclass(frozen=True)
class CacheTiming:
    """Greedy decoding of a fixed number of tokens with and without the key/value cache."""

    steps: int
    seconds_without: float  # median over repeats
    seconds_with: float
    identical: bool  # the same tokens both ways

    @property
    def speedup(self) -> float:
        return self.seconds_without / self.seconds_with


def time_kv_cache(
    model: TransformerSeq2Seq,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    steps: int = 128,
    repeats: int = 3,
) -> CacheTiming:
    """Decode ``steps`` tokens both ways, interleaved and repeated; medians."""
    times: dict[bool, list[float]] = {True: [], False: []}
    outputs: dict[bool, torch.Tensor] = {}
    for _ in range(repeats):
        for use_cache in (False, True):
            with cache_mode(model, use_cache):
                start = time.perf_counter()
                outputs[use_cache] = decode_steps(model, source, source_lengths, steps)
                times[use_cache].append(time.perf_counter() - start)
    return CacheTiming(
        steps,
        statistics.median(times[False]),
        statistics.median(times[True]),
        bool(torch.equal(outputs[False], outputs[True])),
    )


@dataclass(frozen=True)
class CostRow:
    """Forward + backward cost of one layer over a sequence of n positions."""

    n: int
    attention_seconds: float  # a self-attention layer (MultiHeadAttention)
    lstm_seconds: float  # an nn.LSTM layer of the same width
    attention_bytes: int  # tensors kept for the backward pass
    lstm_bytes: int


def _saved_bytes(fn: Callable[[], torch.Tensor]) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of ``fn()`` (each storage once)."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn()
    return sum(storages.values())


def attention_vs_lstm_cost(
    lengths: Sequence[int] = (32, 128, 512, 2048),
    d_model: int = 128,
    nhead: int = 4,
    repeats: int = 5,
    seed: int = 0,
) -> list[CostRow]:
    """Forward + backward time (median) and saved memory: self-attention vs an LSTM, one sequence.

    Self-attention does n²·d work for the scores but all positions at once; the
    LSTM does n·d² work one position after another. Short sequences are timed
    over several calls per repeat, so that each timing lasts long enough to trust.
    """
    seed_everything(seed)
    attention_layer = MultiHeadAttention(d_model, nhead, batch_first=True)
    lstm = nn.LSTM(d_model, d_model, batch_first=True)
    rows = []
    for n in lengths:
        x = torch.randn(1, n, d_model, requires_grad=True)
        calls = max(1, 512 // n)

        def run_attention(x: torch.Tensor = x) -> torch.Tensor:
            return attention_layer(x, x, x, need_weights=False)[0]

        def run_lstm(x: torch.Tensor = x) -> torch.Tensor:
            return lstm(x)[0]

        seconds: dict[str, list[float]] = {"attention": [], "lstm": []}
        for _ in range(repeats):
            for name, fn in (("attention", run_attention), ("lstm", run_lstm)):
                start = time.perf_counter()
                for _ in range(calls):
                    fn().sum().backward()
                seconds[name].append((time.perf_counter() - start) / calls)
        rows.append(
            CostRow(
                n,
                statistics.median(seconds["attention"]),
                statistics.median(seconds["lstm"]),
                _saved_bytes(run_attention),
                _saved_bytes(run_lstm),
            )
        )
    return rows


def crossover(
    rows: Sequence[CostRow], cost: Callable[[CostRow], tuple[float, float]]
) -> int | None:
    """The shortest n from which attention costs more than the LSTM at every longer n, or None.

    ``cost(row)`` gives (attention, lstm), e.g. their seconds or their bytes.
    """
    found = None
    for row in reversed(rows):
        attention_cost, lstm_cost = cost(row)
        if attention_cost <= lstm_cost:
            break
        found = row.n
    return found


def head_alignment_accuracy(
    model: TransformerSeq2Seq, data: ParallelData, pairs: Sequence[Pair]
) -> list[list[float]]:
    """10장's alignment accuracy of every cross-attention head: [layer][head].

    Each head's (T, S) weights, read with teacher forcing, scored against the
    pairs' gold alignments like :func:`course_utils.attention.alignment_accuracy`.
    """
    per_head: dict[tuple[int, int], list[torch.Tensor]] = {}
    for pair in pairs:
        maps = attention_maps(
            model,
            data.source_vocab.encode(list(pair.source)),
            [*data.target_vocab.encode(list(pair.target)), EOS],
        )["cross"]
        for layer, weights in enumerate(maps):
            for head in range(weights.shape[0]):
                per_head.setdefault((layer, head), []).append(weights[head])
    gold = [pair.alignment for pair in pairs]
    layers = len(model.transformer.decoder.layers)
    heads = model.transformer.decoder_layers()[0].multihead_attn.num_heads
    return [
        [alignment_accuracy(per_head[(layer, head)], gold) for head in range(heads)]
        for layer in range(layers)
    ]


def attention_maps(
    model: TransformerSeq2Seq, source: Sequence[int], target: Sequence[int]
) -> dict[str, list[torch.Tensor]]:
    """Per-head weights of one sentence pair read with teacher forcing, layer by layer.

    ``source`` ids, ``target`` ids ending with ``<eos>``. Returns
    ``"encoder"`` (h, S, S), ``"decoder_self"`` (h, T, T) and ``"cross"``
    (h, T, S) for each layer; row j of a decoder map belongs to the step that
    predicts target token j.
    """
    model.eval()
    batch = make_batch([(list(source), list(target))])
    device = next(model.parameters()).device
    with torch.no_grad():
        memory = model.encode(batch.source.to(device), batch.source_lengths)
        model.decode(batch.target_in.to(device), memory)
    transformer = model.transformer
    return {
        "encoder": [
            _weights(layer.attention_weights)[0].cpu() for layer in transformer.encoder_layers()
        ],
        "decoder_self": [
            _weights(layer.self_attention_weights)[0].cpu()
            for layer in transformer.decoder_layers()
        ],
        "cross": [
            _weights(layer.cross_attention_weights)[0].cpu()
            for layer in transformer.decoder_layers()
        ],
    }


def epoch_seconds(
    models: dict[str, EncoderDecoder],
    data: ParallelData,
    config: TranslationConfig,
    steps: int = 5,
    repeats: int = 3,
) -> dict[str, float]:
    """Seconds per training epoch of each model, from timed training steps, interleaved.

    Each model (a copy, so the trained weights stay as they are) takes the same
    ``steps`` batches with Adam, model after model, ``repeats`` times; the median
    step time × the number of batches in an epoch.
    """
    examples = data.examples("train")
    size = config.training.batch_size
    batches = [make_batch(examples[i * size : (i + 1) * size]) for i in range(steps)]
    copies = {name: copy.deepcopy(model).train() for name, model in models.items()}
    optimizers = {
        name: torch.optim.Adam(model.parameters(), lr=config.training.learning_rate)
        for name, model in copies.items()
    }
    times: dict[str, list[float]] = {name: [] for name in copies}
    for _ in range(repeats):
        for name, model in copies.items():
            for batch in batches:
                start = time.perf_counter()
                optimizers[name].zero_grad()
                logits = model(batch.source, batch.source_lengths, batch.target_in)
                sequence_loss(logits, batch.target_out).backward()
                optimizers[name].step()
                times[name].append(time.perf_counter() - start)
    per_epoch = math.ceil(len(examples) / size)
    return {name: statistics.median(t) * per_epoch for name, t in times.items()}
