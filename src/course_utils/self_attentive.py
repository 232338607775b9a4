"""10장 어텐션, 번역 너머: the structured self-attentive sentence embedding (Lin et al., 2017).

A BiLSTM reads the sentence into ``H`` (T, 2u); ``r`` attention hops, each a
distribution over the tokens, read ``r`` weighted sums of it::

    A = softmax(W_s2 tanh(W_s1 H^T))      (r, T)
    M = A H                               (r, 2u)
    P = ||A A^T - I||_F^2                 the penalty that keeps the hops apart

Padded positions are masked the way ``torch.nn.MultiheadAttention`` does it: a
``key_padding_mask`` (B, T) whose True entries are padding, turned into −∞
added to the scores before the softmax, so that they get exactly zero weight.

The chapter's experiment (which chapter of the constitution a clause comes
from, with and without the penalty) is in :mod:`course_utils.experiments.ch10_attention`.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course_utils.checks import check_int, check_token_ids

__all__ = [
    "SelfAttentiveClassifier",
    "StructuredSelfAttention",
    "attention_penalty",
    "hop_distinctness",
]


class StructuredSelfAttention(nn.Module):
    """``r`` attention hops over ``H`` (B, T, 2u): ``M = A H`` (B, r, 2u) and ``A`` (B, r, T)."""

    def __init__(self, input_size: int, attention_size: int, hops: int) -> None:
        super().__init__()
        check_int(input_size, "input_size"), check_int(attention_size, "attention_size")
        check_int(hops, "hops")
        self.input_size, self.attention_size, self.hops = input_size, attention_size, hops
        self.w_s1 = nn.Parameter(torch.empty(attention_size, input_size))  # W_s1: (d_a, 2u)
        self.w_s2 = nn.Parameter(torch.empty(hops, attention_size))  # W_s2: (r, d_a)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in ±1/√fan_in, as ``torch.nn.Linear`` starts its weights."""
        for weight in (self.w_s1, self.w_s2):
            bound = 1 / math.sqrt(weight.shape[1])
            nn.init.uniform_(weight, -bound, bound)

    def forward(
        self, h: torch.Tensor, key_padding_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``h`` (B, T, 2u); ``key_padding_mask`` (B, T), True where a position is padding."""
        _check_h(h, self.input_size)  # (B, T, 2u) floats with T ≥ 1
        scores = self.w_s2 @ torch.tanh(self.w_s1 @ h.mT)  # (B, r, T) = W_s2 tanh(W_s1 H^T)
        if key_padding_mask is not None:
            scores = scores + _padding_bias(key_padding_mask, h)[:, None, :]  # −∞ at pads
        attention = torch.softmax(scores, dim=-1)  # (B, r, T): each hop sums to 1
        return attention @ h, attention  # M: (B, r, 2u), A: (B, r, T)


def _check_h(h: torch.Tensor, input_size: int) -> None:
    if not isinstance(h, torch.Tensor) or h.dim() != 3 or h.shape[-1] != input_size:
        got = tuple(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
        raise ValueError(f"expected h of shape (batch, seq_len, {input_size}), got {got}")
    if not h.is_floating_point():
        raise TypeError(f"h must be a float tensor, got {h.dtype}")
    if h.shape[1] == 0:
        raise ValueError("h has no positions (seq_len = 0): there is nothing to attend to")


def _padding_bias(key_padding_mask: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """0 at tokens, −∞ at padding: (B, T), to add to the scores."""
    if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.dtype != torch.bool:
        got = getattr(key_padding_mask, "dtype", type(key_padding_mask).__name__)
        raise TypeError(f"key_padding_mask must be a bool tensor (True = padding), got {got}")
    if key_padding_mask.shape != h.shape[:2]:
        raise ValueError(
            f"key_padding_mask must have shape (batch, seq_len) = {tuple(h.shape[:2])}, "
            f"got {tuple(key_padding_mask.shape)}"
        )
    if bool(key_padding_mask.all(dim=1).any()):
        rows = key_padding_mask.all(dim=1).nonzero().flatten().tolist()
        raise ValueError(f"rows {rows} of key_padding_mask are all padding: nothing to attend to")
    zeros = torch.zeros(key_padding_mask.shape, dtype=h.dtype, device=h.device)
    return zeros.masked_fill(key_padding_mask, float("-inf"))  # (B, T)


def _check_attention(attention: torch.Tensor) -> None:
    if not isinstance(attention, torch.Tensor):
        raise TypeError(f"attention must be a torch.Tensor, got {type(attention).__name__}")
    if attention.dim() != 3 or 0 in attention.shape:
        raise ValueError(
            "expected attention A of shape (batch, hops, seq_len) with batch >= 1, hops >= 1 "
            f"and seq_len >= 1, got {tuple(attention.shape)}"
        )


def attention_penalty(attention: torch.Tensor) -> torch.Tensor:
    """``||A A^T − I||_F^2`` for each sentence's ``A`` (B, r, T), averaged over the batch."""
    _check_attention(attention)
    hops = attention.shape[1]
    identity = torch.eye(hops, dtype=attention.dtype, device=attention.device)  # (r, r)
    overlap = attention @ attention.mT  # (B, r, r): entry (i, j) is how much hops i and j overlap
    return (overlap - identity).pow(2).sum(dim=(1, 2)).mean()


def hop_distinctness(attention: torch.Tensor) -> torch.Tensor:
    """Mean Jensen–Shannon divergence (bits) between every pair of hops, averaged over sentences.

    0 when all of a sentence's hops are the same distribution, 1 when no two
    of them share a token. ``attention`` (B, r, T) with ``r >= 2``.
    """
    _check_attention(attention)
    if attention.shape[1] < 2:
        raise ValueError(f"need at least 2 hops to compare, got {attention.shape[1]}")
    pairs = list(itertools.combinations(range(attention.shape[1]), 2))
    p = attention[:, [i for i, _ in pairs]]  # (B, pairs, T)
    q = attention[:, [j for _, j in pairs]]  # (B, pairs, T)
    mean = (p + q) / 2

    def kl(a: torch.Tensor) -> torch.Tensor:  # KL(a || mean) in bits; 0 · log 0 = 0
        return (torch.xlogy(a, a) - torch.xlogy(a, mean)).sum(dim=-1) / math.log(2)

    return ((kl(p) + kl(q)) / 2).mean()


def _right_padded_lengths(key_padding_mask: torch.Tensor) -> torch.Tensor:
    """The sentence lengths (B,) of a right-padded batch: tokens first, then only padding.

    Packing reads each sentence's first ``length`` positions, so padding on
    the left (or inside a sentence) would feed pads to the LSTM and leave
    tokens out: refused, with a message, rather than answered wrongly.
    """
    if key_padding_mask.dtype != torch.bool:
        raise ValueError(
            f"key_padding_mask must be bool (True at pads), got {key_padding_mask.dtype}"
        )
    lengths = (~key_padding_mask).sum(dim=1)  # (B,)
    if bool((lengths == 0).any()):
        raise ValueError("every sentence needs at least one token that is not padding")
    positions = torch.arange(key_padding_mask.shape[1], device=key_padding_mask.device)
    if not torch.equal(key_padding_mask, positions >= lengths[:, None]):
        raise ValueError(
            "key_padding_mask must pad on the right: each row's tokens first, then only padding"
        )
    return lengths


def _check_tokens_and_mask(
    tokens: torch.Tensor, key_padding_mask: torch.Tensor, vocab_size: int
) -> None:
    shape = check_token_ids(tokens, "tokens", vocab_size)  # (B, T) int64 ids in the vocabulary
    if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.shape != shape:
        got = getattr(key_padding_mask, "shape", None)
        raise ValueError(
            "expected tokens (batch, seq_len) and a key_padding_mask of the same shape, "
            f"got {shape} and {tuple(got) if got is not None else type(key_padding_mask).__name__}"
        )


class SelfAttentiveClassifier(nn.Module):
    """Embedding → BiLSTM → ``r`` attention hops → flattened ``M`` → MLP → class logits."""

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embedding_size: int = 32,
        hidden_size: int = 32,
        attention_size: int = 32,
        hops: int = 4,
        mlp_size: int = 64,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        check_int(padding_idx, "padding_idx", 0), check_int(num_classes, "num_classes")
        least = max(2, padding_idx + 1)  # <pad> (id padding_idx) and a token
        check_int(vocab_size, "vocab_size", least, f"<pad> is id {padding_idx}, and a token")
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=padding_idx)
        self.lstm = nn.LSTM(embedding_size, hidden_size, batch_first=True, bidirectional=True)
        self.attention = StructuredSelfAttention(2 * hidden_size, attention_size, hops)
        self.classifier = nn.Sequential(
            nn.Linear(hops * 2 * hidden_size, mlp_size), nn.ReLU(), nn.Linear(mlp_size, num_classes)
        )

    def forward(
        self, tokens: torch.Tensor, key_padding_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``tokens``, ``key_padding_mask`` (B, T), True at pads → logits (B, C), A (B, r, T)."""
        _check_tokens_and_mask(tokens, key_padding_mask, self.embedding.num_embeddings)
        lengths = _right_padded_lengths(key_padding_mask)  # (B,)
        x = self.embedding(tokens)  # (B, T, E)
        # Packing makes the backward direction start at each sentence's last token, not at a pad.
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = pad_packed_sequence(
            self.lstm(packed)[0], batch_first=True, total_length=tokens.shape[1]
        )  # (B, T, 2u), zeros at pads
        m, attention = self.attention(h, key_padding_mask)  # (B, r, 2u), (B, r, T)
        return self.classifier(m.flatten(1)), attention  # (B, C), (B, r, T)
