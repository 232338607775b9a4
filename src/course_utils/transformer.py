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

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks import check_int, check_tensor, load_state_dict_strict
from course_utils.seq2seq import (
    PAD,
    EncoderDecoder,
    Memory,
    State,
    check_source,
    check_step_tokens,
    check_vocab_size,
)

__all__ = [
    "ACTIVATIONS",
    "DecoderLayer",
    "EncoderLayer",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "SinusoidalPositionalEncoding",
    "Sublayers",
    "Transformer",
    "TransformerDecoder",
    "TransformerEncoder",
    "TransformerSeq2Seq",
    "TransformerSize",
    "attention",
    "causal_mask",
    "load_torch_weights",
    "merge_heads",
    "position_shift_matrix",
    "recorded_weights",
    "sinusoidal_table",
    "split_heads",
    "torch_state_dict_to_ours",
    "transformer_parameter_count",
]


# ---------------------------------------------------------------------------
# Scaled dot-product attention
# ---------------------------------------------------------------------------


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(T, T) bool, True above the diagonal: position t may not look at t + 1, t + 2, …"""
    check_int(size, "size")
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


def _check_query_key_value(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
    """:func:`attention`'s inputs: tensors with one d_k, one S, at least one key, batch dims
    that broadcast."""
    if not all(isinstance(t, torch.Tensor) and t.dim() >= 2 for t in (query, key, value)):
        raise ValueError(
            "query, key and value must be tensors shaped (…, T, d_k), (…, S, d_k), (…, S, d_v)"
        )
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"query (…, T, d_k) and key (…, S, d_k) need one d_k, and value (…, S, d_v) key's S; "
            f"got query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        )
    if key.shape[-2] == 0:
        raise ValueError(f"there must be at least one key to attend to, got key {tuple(key.shape)}")
    try:
        torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch, head) dimensions of query {tuple(query.shape)} and key "
            f"{tuple(key.shape)} do not broadcast"
        ) from None


def _mask_bias_for(attn_mask: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """``attn_mask`` as an additive bias that broadcasts to ``scores``; every row attends."""
    bias = _mask_as_bias(attn_mask, scores.dtype, "attn_mask")
    try:
        torch.broadcast_shapes(bias.shape, scores.shape)
    except RuntimeError:
        raise ValueError(
            f"attn_mask {tuple(bias.shape)} does not broadcast to the scores (…, T, S) = "
            f"{tuple(scores.shape)}"
        ) from None
    _check_rows_attend(bias)
    return bias


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
    _check_query_key_value(query, key, value)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (…, T, S)
    if attn_mask is not None:
        scores = scores + _mask_bias_for(attn_mask, scores)  # −∞ where a position is ignored
    weights = torch.softmax(scores, dim=-1)  # (…, T, S); a masked position gets exactly 0
    if dropout is not None:
        weights = dropout(weights)
    return weights @ value, weights  # (…, T, d_v), (…, T, S)


# ---------------------------------------------------------------------------
# Multi-head attention
# ---------------------------------------------------------------------------


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, d_model) → (B, h, T, d_k): head i gets features i·d_k … (i+1)·d_k − 1."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a (B, T, d_model) tensor, got {got}")
    check_int(num_heads, "num_heads")
    B, T, D = x.shape
    if D % num_heads:
        raise ValueError(f"d_model = {D} is not divisible by num_heads = {num_heads}")
    return x.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, T, d_k) → (B, T, h·d_k): the heads' outputs side by side (Concat in the paper)."""
    B, h, T, d_k = check_tensor(x, "x", "B, h, T, d_k", "any")
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
        check_int(embed_dim, "embed_dim"), check_int(num_heads, "num_heads")
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
        check_int(normalized_shape, "normalized_shape")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(normalized_shape))  # γ
        self.bias = nn.Parameter(torch.zeros(normalized_shape))  # β

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != self.weight.shape[0]:
            raise ValueError(
                f"LayerNorm expects (…, {self.weight.shape[0]}) features, got "
                f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
            )
        centered = x - x.mean(dim=-1, keepdim=True)  # (…, d_model): x − μ
        variance = (centered * centered).mean(
            dim=-1, keepdim=True
        )  # (…, 1): σ², divided by d_model
        return centered / torch.sqrt(variance + self.eps) * self.weight + self.bias


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model): PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(…)."""
    check_int(max_len, "max_len", 0)
    check_int(d_model, "d_model", 2)
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
    check_int(d_model, "d_model", 2)
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


def _check_positions(x: torch.Tensor, offset: int, max_len: int, d_model: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a (B, T, d_model = {d_model}) tensor, got {got}")
    length = x.shape[1]
    check_int(offset, "offset", least=0)  # the first position
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
        self.max_len, self.d_model = max_len, d_model
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_positions(x, offset, self.max_len, self.d_model)
        return x + self.table[offset : offset + x.shape[1]]


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained vector per position (BERT, GPT): only positions seen in training learn."""

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        check_int(d_model, "d_model"), check_int(max_len, "max_len")
        self.max_len, self.d_model = max_len, d_model
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_positions(x, offset, self.max_len, self.d_model)
        return x + self.embedding.weight[offset : offset + x.shape[1]]


# ---------------------------------------------------------------------------
# Encoder and decoder layers
# ---------------------------------------------------------------------------

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu, "gelu": F.gelu, "gelu_tanh": functools.partial(F.gelu, approximate="tanh")
}  # fmt: skip


class Sublayers(nn.Module):
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


_AXES = {"src": "B, S, d_model", "tgt": "B, T, d_model", "memory": "B, S, d_model"}


def _check_layer_inputs(d_model: int, **tensors: torch.Tensor) -> None:
    """Batch-first (B, T or S, d_model) float inputs, named as passed, with one batch size B."""
    shapes = {
        name: check_tensor(x, name, _AXES[name], d_model=d_model) for name, x in tensors.items()
    }
    if len({shape[0] for shape in shapes.values()}) > 1:
        got = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"{' and '.join(shapes)} need one batch size B, got {got}")


def _check_d_model(d_model: int, nhead: int) -> None:
    check_int(d_model, "d_model"), check_int(nhead, "nhead")
    if d_model % nhead:
        raise ValueError(
            f"d_model = {d_model} must be divisible by nhead = {nhead}: "
            "each head gets d_k = d_model / nhead features"
        )


class EncoderLayer(Sublayers):
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
        _check_layer_inputs(self.self_attn.embed_dim, src=src)
        x = self.residual(
            src,
            lambda y: self.self_attention(y, src_mask, src_key_padding_mask),
            self.norm1,
            self.dropout1,
        )
        return self.residual(x, self.feed_forward, self.norm2, self.dropout2)


class DecoderLayer(Sublayers):
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
        _check_layer_inputs(self.self_attn.embed_dim, tgt=tgt, memory=memory)  # one B, one d_model
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

    def __post_init__(self) -> None:
        for name in ("d_model", "nhead", "dim_feedforward"):
            check_int(getattr(self, name), name)
        for name in ("num_encoder_layers", "num_decoder_layers"):
            check_int(getattr(self, name), name, least=0)


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
        _check_layer_inputs(self.norm.weight.shape[0], src=src)
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
        _check_layer_inputs(self.norm.weight.shape[0], tgt=tgt, memory=memory)
        for layer in self.layers:
            tgt = layer(
                tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask
            )
        return self.norm(tgt)


def recorded_weights(weights: torch.Tensor | None) -> torch.Tensor:
    """The attention weights a layer recorded on its last run (an error before it ran)."""
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
        _check_layer_inputs(self.size.d_model, src=src, tgt=tgt)
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
    if not isinstance(ours, nn.Module) or not isinstance(theirs, (nn.Module, Mapping)):
        raise TypeError(
            f"ours must be a module and theirs a torch.nn module or its state dict, got "
            f"{type(ours).__name__} and {type(theirs).__name__}"
        )
    state = theirs.state_dict() if isinstance(theirs, nn.Module) else dict(theirs)
    load_state_dict_strict(ours, torch_state_dict_to_ours(state))


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
        self.source_vocab_size = check_vocab_size(source_vocab_size, "source_vocab_size")
        self.target_vocab_size = check_vocab_size(target_vocab_size, "target_vocab_size")
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

    def embed(self, embedding: nn.Embedding, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        x = embedding(tokens) * math.sqrt(self.d_model)  # (B, T, d_model), paper §3.4
        return self.dropout(self.positions(x, offset))

    def encode(self, source: torch.Tensor, source_lengths: torch.Tensor) -> Memory:
        check_source(source, source_lengths, self.source_vocab_size)
        padding = source == PAD  # (B, S)
        outputs = self.transformer.encoder(
            self.embed(self.source_embedding, source), src_key_padding_mask=padding
        )  # (B, S, d_model)
        real = (~padding).unsqueeze(-1).to(outputs.dtype)  # (B, S, 1)
        context = (outputs * real).sum(1) / real.sum(1)  # (B, d_model): mean of the real positions
        return Memory(outputs, padding, context)

    def decode(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        """Every target position at once under the causal mask: (B, T) → hidden (B, T, d_model)."""
        T = target_in.shape[1]
        return self.transformer.decoder(
            self.embed(self.target_embedding, target_in),
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
        check_step_tokens(tokens, memory, self.target_vocab_size)
        decoder = self.transformer.decoder
        if not self.use_cache:
            prefix = torch.cat([state[0], tokens.unsqueeze(1)], dim=1)  # (B, t + 1)
            hidden = self.decode(prefix, memory)[:, -1]  # (B, d_model)
            weights = recorded_weights(
                self.transformer.decoder_layers()[-1].cross_attention_weights
            )
            weights = weights[:, :, -1]  # (B, h, S)
            return self.output(hidden), (prefix,), weights.mean(1)
        t = state[0].shape[2]  # positions decoded so far
        x = self.embed(self.target_embedding, tokens.unsqueeze(1), offset=t)  # (B, 1, d_model)
        bias = _mask_as_bias(memory.padding_mask, x.dtype, "padding_mask")[:, None, None, :]
        new_state: list[torch.Tensor] = []
        for i, layer in enumerate(self.transformer.decoder_layers()):
            past = state[4 * i : 4 * i + 4]
            x, cache = layer.step(x, (past[0], past[1], past[2], past[3]), bias)
            new_state += cache
        hidden = decoder.norm(x)[:, 0]  # (B, d_model)
        weights = recorded_weights(self.transformer.decoder_layers()[-1].cross_attention_weights)
        weights = weights[:, :, 0]  # (B, h, S)
        return self.output(hidden), tuple(new_state), weights.mean(1)


# ---------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------


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
    if not isinstance(size, TransformerSize):
        raise TypeError(f"size must be a TransformerSize, got {type(size).__name__}")
    check_int(vocab_size, "vocab_size")
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
