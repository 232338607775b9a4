"""13장's rotary position embedding (course_utils.rope) against transformers' Llama rotary
functions, and the property that makes it relative: a score depends on m − n only."""

from __future__ import annotations

import pytest
import torch

from course_utils.rope import apply_rope, rope_angles

llama = pytest.importorskip("transformers.models.llama.modeling_llama")


def test_equals_transformers_rotary_embedding():
    from transformers import LlamaConfig

    config = LlamaConfig(hidden_size=64, num_attention_heads=4, max_position_embeddings=128)
    rotary = llama.LlamaRotaryEmbedding(config)
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 50, 16, generator=generator)
    k = torch.randn(2, 4, 50, 16, generator=generator)
    positions = torch.arange(30, 80)
    cos, sin = rotary(q, positions[None])
    theirs_q, theirs_k = llama.apply_rotary_pos_emb(q, k, cos, sin)
    assert torch.allclose(apply_rope(q, positions), theirs_q, atol=2e-5, rtol=0)
    assert torch.allclose(apply_rope(k, positions), theirs_k, atol=2e-5, rtol=0)


def test_scores_depend_on_the_relative_position_only():
    generator = torch.Generator().manual_seed(1)
    q = torch.randn(1, 1, 1, 32, generator=generator, dtype=torch.float64)
    k = torch.randn(1, 1, 1, 32, generator=generator, dtype=torch.float64)

    def score(m: int, n: int) -> float:
        rq = apply_rope(q, torch.tensor([m]))
        rk = apply_rope(k, torch.tensor([n]))
        return float((rq * rk).sum())

    for shift in (1, 17, 500):
        assert abs(score(7, 3) - score(7 + shift, 3 + shift)) < 1e-9
    assert abs(score(7, 3) - score(7, 4)) > 1e-3  # another distance, another score
    rotated = apply_rope(q, torch.tensor([9]))
    assert torch.allclose(rotated.norm(), q.norm())  # a rotation keeps the length
    assert torch.equal(apply_rope(q, torch.tensor([0])), q)  # position 0 does not turn


def test_angles_and_errors():
    angles = rope_angles(torch.tensor([0, 1, 2]), 8)
    assert angles.shape == (3, 4) and torch.allclose(
        angles[1], 10000 ** (-torch.arange(0, 8, 2) / 8).double()
    )
    with pytest.raises(ValueError, match="head_dim must be even"):
        rope_angles(torch.tensor([1]), 7)
    with pytest.raises(ValueError, match=r"positions must be \(T,\) = \(3,\)"):
        apply_rope(torch.zeros(1, 1, 3, 4), torch.arange(4))
