"""Rotary position embedding (RoPE; Su et al., 2021), 13장: positions as rotations.

11장 adds a position's sinusoidal vector to its token's. RoPE instead rotates the
query and the key of each head: the d_k features form d_k / 2 pairs, and pair i
of position m turns by the angle m · θ_i, with θ_i = base^(−2i / d_k) (the
frequencies of 11장's table). A rotation keeps lengths, and the dot product of a
query rotated by m θ and a key rotated by n θ depends on m − n only: attention
scores see relative positions, whatever the absolute ones.

The pairs here are feature i and feature i + d_k / 2 (the layout of
``transformers``' Llama, whose ``apply_rotary_pos_emb`` ``tests/test_rope.py``
compares with :func:`apply_rope`); the paper pairs neighbours (2i, 2i + 1), which
is the same rotation with the features in another order.
"""

from __future__ import annotations

import torch

from course_utils.checks import check_int, check_tensor

__all__ = ["apply_rope", "rope_angles"]


def rope_angles(positions: torch.Tensor, head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """(…, head_dim / 2) angles m · θ_i for the integer ``positions`` (…)."""
    check_int(head_dim, "head_dim")
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (features turn in pairs), got {head_dim}")
    if not base > 1:
        raise ValueError(f"base must be > 1, got {base}")
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (d/2,)
    return positions.to(torch.float64)[..., None] * theta


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Queries or keys x (B, h, T, d_k), each position's pairs turned by its angles:
    (x₁, x₂) → (x₁ cos − x₂ sin, x₁ sin + x₂ cos), x₁ the first half of the features."""
    _, _, length, head_dim = check_tensor(x, "x", "B, h, T, d_k")
    if not isinstance(positions, torch.Tensor) or positions.shape != (length,):
        got = tuple(positions.shape) if isinstance(positions, torch.Tensor) else positions
        raise ValueError(f"positions must be (T,) = ({length},), got {got}")
    angles = rope_angles(positions, head_dim, base)  # (T, d/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    first, second = x[..., : head_dim // 2], x[..., head_dim // 2 :]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
