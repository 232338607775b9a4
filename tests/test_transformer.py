"""11장 트랜스포머: every from-scratch piece against a reference nobody here wrote.

:func:`attention` equals ``F.scaled_dot_product_attention`` (whose bool masks
mean "attend", the opposite of ours), :class:`MultiHeadAttention` equals
``nn.MultiheadAttention``, :class:`LayerNorm` equals ``nn.LayerNorm``, and the
encoder layer, the decoder layer and the whole :class:`Transformer` equal
``torch.nn``'s (outputs in float32 to 1e-5, and gradients after one backward
pass in float64 to 1e-10), with the weights copied by :func:`load_torch_weights`. The sinusoidal
table is checked against its formula written out with ``math``, and the shift
matrix against the table at pos + k. Hypothesis checks the invariants of
masking: masked keys get exactly zero weight, nothing before position t depends
on anything after it, padding changes no real position, and a row with nothing
left to attend to is an error rather than a NaN. The translation model decodes
the same with and without its key/value cache.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from course_utils.checks import load_state_dict_strict
from course_utils.experiments.ch11_transformer import (
    PAPER_SIZES,
    PAPER_VOCAB_SIZE,
    cache_mode,
    decode_steps,
    saved_bytes,
    softmax_jacobian_norm,
    time_kv_cache,
    torch_parameter_count,
    why_scale,
)
from course_utils.seq2seq import (
    EOS,
    PAD,
    SOS,
    beam_search,
    greedy_decode,
    make_batch,
)
from course_utils.transformer import (
    DecoderLayer,
    EncoderLayer,
    LayerNorm,
    LearnedPositionalEmbedding,
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    Transformer,
    TransformerSeq2Seq,
    TransformerSize,
    attention,
    causal_mask,
    load_torch_weights,
    merge_heads,
    position_shift_matrix,
    sinusoidal_table,
    split_heads,
    transformer_parameter_count,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ATOL = 1e-5  # float32 forward passes against torch's


def close(actual, expected, atol=ATOL):
    torch.testing.assert_close(actual, expected, rtol=0, atol=atol)


def padding_mask(lengths, width):
    """(B, width), True at the pads: key_padding_mask as in nn.MultiheadAttention."""
    return torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]


def random_mask(shape, seed, p=0.4):
    """A bool mask (True = ignore) that leaves key 0 of every row visible."""
    mask = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < p
    mask[..., 0] = False
    return mask


def as_float(mask, seed):
    """The bool mask as an additive float mask: −∞ where True, small random numbers elsewhere."""
    noise = torch.randn(mask.shape, generator=torch.Generator().manual_seed(seed + 1)) * 0.5
    return noise.masked_fill(mask, -math.inf)


def sdpa_weights(query, key, attn_mask):
    """F.scaled_dot_product_attention's weights: with the identity as values it returns them."""
    S = key.shape[-2]
    identity = torch.eye(S, dtype=query.dtype).expand(*key.shape[:-2], S, S)
    return F.scaled_dot_product_attention(query, key, identity, attn_mask=attn_mask)


def quiet(make):
    """Build a torch module without its construction warnings (nested tensors, norm_first)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


# --- scaled dot-product attention against F.scaled_dot_product_attention -------------------------


def _qkv(seed, B=2, h=3, T=4, S=4, d_k=5, d_v=6):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, h, T, d_k, generator=g),
        torch.randn(B, h, S, d_k, generator=g),
        torch.randn(B, h, S, d_v, generator=g),
    )


def _masks(kind, seed):
    """Our mask (True = ignore, or float) for each kind, on (B=2, h=3, T=4, S=4) scores."""
    padding = padding_mask([4, 2], 4)[:, None, None, :]  # (B, 1, 1, S)
    if kind == "padding":
        return padding
    if kind == "causal":
        return causal_mask(4)  # (T, S)
    if kind == "padding and causal":
        return padding | causal_mask(4)  # (B, 1, T, S)
    return as_float(random_mask((2, 3, 4, 4), seed), seed)  # float (B, h, T, S)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["padding", "causal", "padding and causal", "float"])
def test_attention_equals_torch_sdpa_given_the_inverted_bool_mask_or_the_same_float_mask(
    kind, seed
):
    query, key, value = _qkv(seed)
    mask = _masks(kind, seed)
    output, weights = attention(query, key, value, mask)
    theirs = mask if mask.is_floating_point() else ~mask  # SDPA's bool mask: True = attend
    close(output, F.scaled_dot_product_attention(query, key, value, attn_mask=theirs))
    close(weights, sdpa_weights(query, key, theirs))


def test_attention_bool_mask_means_ignore_so_sdpa_needs_it_inverted():
    query, key, value = _qkv(seed=7)
    mask = random_mask((2, 3, 4, 4), seed=7)
    mask[..., -1] = True  # every row has a key to ignore and (key 0) one to attend to
    output, _ = attention(query, key, value, mask)
    inverted = F.scaled_dot_product_attention(query, key, value, attn_mask=~mask)
    unchanged = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    close(output, inverted)
    assert bool(torch.isfinite(unchanged).all())  # a valid mask for SDPA, just the wrong way round
    assert not torch.allclose(output, unchanged, atol=1e-3)


def test_attention_without_a_mask_equals_sdpa_and_is_softmax_of_scaled_scores():
    query, key, value = _qkv(seed=1, T=3, S=5)
    output, weights = attention(query, key, value)
    close(output, F.scaled_dot_product_attention(query, key, value))
    q, k = query.double().numpy(), key.double().numpy()
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    e = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(weights.numpy(), e / e.sum(-1, keepdims=True), rtol=0, atol=1e-6)


def test_attention_gradients_match_finite_differences():
    query, key, value = (t.double().requires_grad_() for t in _qkv(seed=2, B=1, h=2, T=3, S=4))
    mask = padding_mask([3], 4)[:, None, None, :] | causal_mask(4)[:3]  # (1, 1, 3, 4)
    assert torch.autograd.gradcheck(
        lambda q, k, v: attention(q, k, v, mask), (query, key, value), eps=1e-6, atol=1e-7
    )


# --- multi-head attention against nn.MultiheadAttention ------------------------------------------

D, H = 8, 2  # d_model, heads: d_k = 4


def mha_pair(batch_first=True, seed=0, embed_dim=D, num_heads=H):
    """Our MultiHeadAttention with torch's random weights copied in (both in eval mode)."""
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(embed_dim, num_heads, batch_first=batch_first).eval()
    nn.init.normal_(theirs.in_proj_bias)  # torch starts its biases at 0: make them matter
    nn.init.normal_(theirs.out_proj.bias)
    ours = MultiHeadAttention(embed_dim, num_heads, batch_first=batch_first).eval()
    load_torch_weights(ours, theirs)
    return ours, theirs


B, T, S = 3, 4, 6  # cross-attention: S != T
KEY_LENGTHS = [6, 3, 1]

MASK_CASES = {
    "none": lambda: {},
    "key_padding bool": lambda: {"key_padding_mask": padding_mask(KEY_LENGTHS, S)},
    "key_padding float": lambda: {
        "key_padding_mask": as_float(padding_mask(KEY_LENGTHS, S), seed=3)
    },
    "attn (T, S) bool": lambda: {"attn_mask": random_mask((T, S), seed=4)},
    "attn (T, S) float": lambda: {"attn_mask": as_float(random_mask((T, S), seed=5), seed=5)},
    "attn (B·h, T, S) bool": lambda: {"attn_mask": random_mask((B * H, T, S), seed=6)},
    "attn (B·h, T, S) float": lambda: {
        "attn_mask": as_float(random_mask((B * H, T, S), seed=7), seed=7)
    },
    "both bool": lambda: {
        "key_padding_mask": padding_mask(KEY_LENGTHS, S),
        "attn_mask": random_mask((B * H, T, S), seed=8),
    },
    "both float": lambda: {
        "key_padding_mask": as_float(padding_mask(KEY_LENGTHS, S), seed=9),
        "attn_mask": as_float(random_mask((T, S), seed=10), seed=10),
    },
}


def _cross_inputs(batch_first, seed=0):
    g = torch.Generator().manual_seed(seed)
    query, key, value = (torch.randn(B, n, D, generator=g) for n in (T, S, S))
    if not batch_first:
        query, key, value = (x.transpose(0, 1) for x in (query, key, value))
    return query, key, value


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("case", list(MASK_CASES))
def test_multi_head_attention_equals_torch_outputs_and_weights(case, batch_first, average):
    ours, theirs = mha_pair(batch_first)
    query, key, value = _cross_inputs(batch_first)
    masks = MASK_CASES[case]()
    out, weights = ours(query, key, value, average_attn_weights=average, **masks)
    expected, expected_weights = theirs(query, key, value, average_attn_weights=average, **masks)
    close(out, expected)
    close(weights, expected_weights)
    assert weights.shape == ((B, T, S) if average else (B, H, T, S))
    layout = (B, T, D) if batch_first else (T, B, D)
    assert out.shape == layout


@pytest.mark.parametrize("batch_first", [True, False])
def test_multi_head_self_attention_with_a_causal_mask_equals_torch(batch_first):
    ours, theirs = mha_pair(batch_first, seed=1)
    x = torch.randn(B, 5, D)
    if not batch_first:
        x = x.transpose(0, 1)
    masks = {"key_padding_mask": padding_mask([5, 2, 4], 5), "attn_mask": causal_mask(5)}
    out, weights = ours(x, x, x, average_attn_weights=False, **masks)
    expected, expected_weights = theirs(x, x, x, average_attn_weights=False, **masks)
    close(out, expected)
    close(weights, expected_weights)


def test_multi_head_attention_without_weights_returns_none_and_the_same_output():
    ours, theirs = mha_pair(seed=2)
    query, key, value = _cross_inputs(True, seed=2)
    mask = padding_mask(KEY_LENGTHS, S)
    out, weights = ours(query, key, value, key_padding_mask=mask, need_weights=False)
    expected, none = theirs(query, key, value, key_padding_mask=mask, need_weights=False)
    assert weights is None and none is None
    close(out, expected)


def test_each_head_uses_its_own_rows_of_the_projections():
    """Head i, by hand in float64: rows i·d_k … (i+1)·d_k − 1 of q/k/v_proj, columns of out_proj."""
    ours, _ = mha_pair(seed=3, embed_dim=12, num_heads=3)
    d_k = 4
    g = torch.Generator().manual_seed(3)
    query, key = torch.randn(2, 3, 12, generator=g), torch.randn(2, 5, 12, generator=g)
    with torch.no_grad():
        out, weights = ours(query, key, key, average_attn_weights=False)  # weights (B, h, T, S)

    def param(layer):
        return layer.weight.detach().double().numpy(), layer.bias.detach().double().numpy()

    (W_q, b_q), (W_k, b_k), (W_v, b_v) = (param(p) for p in (ours.q_proj, ours.k_proj, ours.v_proj))
    W_o, b_o = param(ours.out_proj)
    x_q, x_kv = query.double().numpy(), key.double().numpy()
    expected = np.broadcast_to(b_o, (2, 3, 12)).copy()
    for i in range(3):
        rows = slice(i * d_k, (i + 1) * d_k)
        q = x_q @ W_q[rows].T + b_q[rows]  # (B, T, d_k): x W_i^Q
        k = x_kv @ W_k[rows].T + b_k[rows]
        v = x_kv @ W_v[rows].T + b_v[rows]
        scores = q @ np.swapaxes(k, 1, 2) / math.sqrt(d_k)  # (B, T, S)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        a = e / e.sum(-1, keepdims=True)
        np.testing.assert_allclose(weights[:, i].numpy(), a, rtol=0, atol=1e-6)
        expected += (a @ v) @ W_o[:, rows].T  # Concat(head_1 … head_h) W^O, one block at a time
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=ATOL)


def test_split_heads_gives_head_i_the_features_i_dk_to_i_plus_1_dk():
    x = torch.arange(2 * 3 * 12, dtype=torch.float32).view(2, 3, 12)
    heads = split_heads(x, 3)  # (B, h, T, d_k)
    assert heads.shape == (2, 3, 3, 4)
    for i in range(3):
        assert torch.equal(heads[:, i], x[:, :, 4 * i : 4 * (i + 1)])


# --- the invariants of masking (hypothesis) -------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    queries=st.integers(1, 4),
    extra=st.integers(0, 3),
    causal_too=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one(
    lengths, queries, extra, causal_too, seed
):
    width = max(lengths) + extra
    mask = padding_mask(lengths, width)[:, None, None, :]  # (B, 1, 1, S)
    if causal_too:  # the query t also ignores the keys after t
        mask = mask | torch.ones(queries, width, dtype=torch.bool).triu(1)
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(len(lengths), 2, queries, 3, generator=g)
    key = torch.randn(len(lengths), 2, width, 3, generator=g)
    _, weights = attention(query, key, torch.randn(len(lengths), 2, width, 4), mask)
    full = mask.expand_as(weights)
    assert bool((weights[full] == 0).all())
    assert bool((weights[~full] > 0).all())
    close(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(
    lengths=st.lists(st.integers(1, S), min_size=B, max_size=B),
    seed=st.integers(0, 2**16),
)
def test_multi_head_attention_gives_masked_keys_exactly_zero_weight_in_every_head(lengths, seed):
    ours, _ = mha_pair(seed=4)
    query, key, value = _cross_inputs(True, seed=seed)
    key_padding = padding_mask(lengths, S)
    attn_mask = random_mask((T, S), seed)
    with torch.no_grad():
        _, weights = ours(
            query, key, value, key_padding, attn_mask=attn_mask, average_attn_weights=False
        )
    hidden = (key_padding[:, None, None, :] | attn_mask).expand_as(weights)  # (B, h, T, S)
    assert bool((weights[hidden] == 0).all())
    close(weights.sum(-1), torch.ones(B, H, T), atol=1e-6)


def _assert_causal(outputs_of, x):
    """d output[:, t] / d input[:, u] is exactly 0 for every u > t, and not for u = t."""
    x = x.clone().requires_grad_()
    out = outputs_of(x)
    probe = torch.randn(out.shape[-1])  # a random direction: LayerNorm's outputs sum to a constant
    for t in range(x.shape[1]):
        (grad,) = torch.autograd.grad(
            out[:, t] @ probe, x, torch.ones(x.shape[0]), retain_graph=True
        )
        assert bool((grad[:, t + 1 :] == 0).all()), f"output {t} depends on a later position"
        assert bool((grad[:, t] != 0).any())


@settings(max_examples=10, deadline=None)
@given(length=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_under_the_causal_mask_no_output_depends_on_a_later_position(length, seed):
    torch.manual_seed(seed)
    x = torch.randn(2, length, D)
    mask = causal_mask(length)
    mha = MultiHeadAttention(D, H, batch_first=True)
    decoder = DecoderLayer(D, H, 16, dropout=0.0).eval()
    memory = torch.randn(2, 3, D)
    _assert_causal(lambda x: attention(x, x, x, mask)[0], x)
    _assert_causal(lambda x: mha(x, x, x, attn_mask=mask)[0], x)
    _assert_causal(lambda x: decoder(x, memory, tgt_mask=mask), x)


def _repadded(x, lengths, extra, seed, junk=100.0):
    """x (B, L, D) with ``extra`` more positions and new, large junk at every pad."""
    g = torch.Generator().manual_seed(seed)
    longer = torch.randn(x.shape[0], x.shape[1] + extra, x.shape[2], generator=g) * junk
    for b, n in enumerate(lengths):
        longer[b, :n] = x[b, :n]
    return longer, padding_mask(lengths, longer.shape[1])


@settings(max_examples=15, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    extras=st.lists(st.integers(1, 4), min_size=1, max_size=2),
    seed=st.integers(0, 2**16),
)
def test_pad_length_and_content_do_not_change_the_real_positions(lengths, extras, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(D, H, batch_first=True).eval()
    encoder = EncoderLayer(D, H, 16, dropout=0.0).eval()
    g = torch.Generator().manual_seed(seed)
    width = max(lengths)
    x = torch.randn(len(lengths), width, D, generator=g)
    query = torch.randn(len(lengths), 3, D, generator=g)
    mask = padding_mask(lengths, width)
    with torch.no_grad():
        attended, weights = mha(query, x, x, mask)
        encoded = encoder(x, src_key_padding_mask=mask)
        for i, extra in enumerate(extras):
            longer, longer_mask = _repadded(x, lengths, extra, seed + i + 1)
            attended_long, weights_long = mha(query, longer, longer, longer_mask)
            close(attended_long, attended, atol=1e-6)
            close(weights_long[:, :, :width], weights, atol=1e-6)
            assert bool((weights_long[:, :, width:] == 0).all())
            encoded_long = encoder(longer, src_key_padding_mask=longer_mask)
            for b, n in enumerate(lengths):
                close(encoded_long[b, :n], encoded[b, :n], atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.integers(1, 3), keys=st.integers(1, 3), p=st.floats(0.3, 0.9), seed=st.integers(0, 99)
)
def test_a_row_with_nothing_to_attend_to_raises_and_never_gives_nan(rows, keys, p, seed):
    mask = torch.rand(2, rows, keys, generator=torch.Generator().manual_seed(seed)) < p
    query, key, value = torch.randn(2, rows, 4), torch.randn(2, keys, 4), torch.randn(2, keys, 4)
    for bias in (mask, as_float(mask, seed)):
        if bool(mask.all(-1).any()):
            with pytest.raises(ValueError, match="hides every key"):
                attention(query, key, value, bias)
        else:
            output, weights = attention(query, key, value, bias)
            assert bool(torch.isfinite(output).all() and torch.isfinite(weights).all())


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 3), min_size=2, max_size=2),
    p=st.floats(0.0, 0.8),
    seed=st.integers(0, 99),
)
def test_multi_head_attention_raises_when_the_two_masks_together_hide_a_whole_row(lengths, p, seed):
    ours, _ = mha_pair(seed=5)
    x = torch.randn(2, 3, D)
    key_padding = padding_mask(lengths, 3)  # length 0: every key of that sentence is a pad
    attn_mask = torch.rand(3, 3, generator=torch.Generator().manual_seed(seed)) < p
    hidden = key_padding[:, None, :] | attn_mask  # (B, T, S)
    if bool(hidden.all(-1).any()):
        with pytest.raises(ValueError, match="hides every key"):
            ours(x, x, x, key_padding, attn_mask=attn_mask)
    else:
        output, weights = ours(x, x, x, key_padding, attn_mask=attn_mask)
        assert bool(torch.isfinite(output).all() and torch.isfinite(weights).all())


# --- layer normalisation ------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 4, 16), (2, 1, 3, 6)])
def test_layer_norm_equals_torch(shape, eps):
    torch.manual_seed(len(shape))
    ours, theirs = LayerNorm(shape[-1], eps), nn.LayerNorm(shape[-1], eps)
    nn.init.normal_(theirs.weight)
    nn.init.normal_(theirs.bias)
    load_state_dict_strict(ours, theirs.state_dict())
    x = torch.randn(shape) * 3 + 1
    close(ours(x), theirs(x))


def test_layer_norm_gradients_match_finite_differences():
    norm = LayerNorm(5).double()
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    weight, bias = (torch.randn(5, dtype=torch.float64, requires_grad=True) for _ in range(2))

    def normed(x, weight, bias):
        return torch.func.functional_call(norm, {"weight": weight, "bias": bias}, (x,))

    assert torch.autograd.gradcheck(normed, (x, weight, bias), eps=1e-6, atol=1e-7)


def test_layer_norm_of_an_example_does_not_depend_on_the_rest_of_the_batch():
    torch.manual_seed(0)
    x = torch.randn(4, 6, 8)
    other = x.clone()
    other[1:] = torch.randn(3, 6, 8) * 10 + 5  # the same example 0 in another batch
    layer_norm = LayerNorm(8)
    torch.testing.assert_close(layer_norm(other)[0], layer_norm(x)[0], rtol=0, atol=0)
    # Batch normalisation (train mode) takes its statistics over the batch: the same
    # example comes out differently, so the comparison above can fail.
    batch_norm = nn.BatchNorm1d(8).train()
    example, example_elsewhere = x.view(-1, 8)[:6], other.view(-1, 8)[:6]  # (B·T, 8): example 0
    assert torch.equal(example, example_elsewhere)
    assert not torch.allclose(batch_norm(other.view(-1, 8))[:6], batch_norm(x.view(-1, 8))[:6])


# --- positions ----------------------------------------------------------------------------------


def _pe(pos, d_model):
    """The paper's formula, one number at a time in float64."""
    row = []
    for j in range(d_model):
        i = j // 2
        angle = pos / 10000 ** (2 * i / d_model)
        row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
    return np.array(row)


@pytest.mark.parametrize(("max_len", "d_model"), [(1, 2), (50, 16), (120, 6)])
def test_sinusoidal_table_is_sin_on_even_and_cos_on_odd_dimensions(max_len, d_model):
    table = sinusoidal_table(max_len, d_model)
    assert table.shape == (max_len, d_model) and table.dtype == torch.float32
    expected = np.stack([_pe(pos, d_model) for pos in range(max_len)])
    np.testing.assert_allclose(table.numpy(), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("d_model", [2, 8, 32])
def test_position_shift_matrix_is_a_rotation_taking_pe_pos_to_pe_pos_plus_k(d_model):
    for k in (0, 1, 3, 17, 100):
        M = position_shift_matrix(k, d_model).numpy()
        assert M.dtype == np.float64
        np.testing.assert_allclose(M @ M.T, np.eye(d_model), rtol=0, atol=1e-12)
        assert np.linalg.det(M) == pytest.approx(1.0, abs=1e-9)
        for pos in (0, 1, 5, 42, 250):  # one M_k for every pos: no pos in the matrix
            np.testing.assert_allclose(M @ _pe(pos, d_model), _pe(pos + k, d_model), atol=1e-9)


@pytest.mark.parametrize("module", [SinusoidalPositionalEncoding, LearnedPositionalEmbedding])
def test_positional_modules_add_their_rows_and_refuse_positions_past_max_len(module):
    torch.manual_seed(0)
    positions = module(6, max_len=5)
    x = torch.randn(2, 3, 6)
    table = positions(torch.zeros(1, 5, 6))[0]  # (max_len, d_model): what each position adds
    close(positions(x, offset=2), x + table[2:5], atol=0)
    with pytest.raises(ValueError, match="max_len = 5"):
        positions(torch.zeros(1, 6, 6))
    with pytest.raises(ValueError, match="max_len = 5"):
        positions(x, offset=3)


def test_sinusoidal_encoding_adds_the_table():
    x = torch.randn(2, 4, 6)
    close(SinusoidalPositionalEncoding(6, 10)(x, offset=1), x + sinusoidal_table(10, 6)[1:5], 0)


# --- the layers and the whole Transformer against torch.nn --------------------------------------

LAYER_SETTINGS = [
    pytest.param(norm_first, activation, id=f"{'pre' if norm_first else 'post'}-norm-{activation}")
    for norm_first in (False, True)
    for activation in ("relu", "gelu")
]
SRC_LENGTHS, TGT_LENGTH = [5, 3, 1], 4


def _randomize(module, seed):
    """Random weights and biases everywhere (torch starts biases and LayerNorm at 0 and 1)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.5) + (p.dim() == 1) * 0.1)
    return module


def _sources(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(len(SRC_LENGTHS), max(SRC_LENGTHS), D, generator=g)
    tgt = torch.randn(len(SRC_LENGTHS), TGT_LENGTH, D, generator=g)
    return src, tgt, padding_mask(SRC_LENGTHS, max(SRC_LENGTHS))


def _real(x, lengths=SRC_LENGTHS):
    return torch.cat([x[b, :n] for b, n in enumerate(lengths)])


@pytest.mark.parametrize(("norm_first", "activation"), LAYER_SETTINGS)
def test_encoder_layer_equals_torch(norm_first, activation):
    """All positions with autograd on; under no_grad the real positions only.

    Under ``torch.no_grad()`` in eval mode torch's encoder layer may take its fast
    path, which is free to write anything at the padded positions: only the
    positions below each sentence's length are compared there.
    """
    kwargs = {"dim_feedforward": 16, "dropout": 0.1, "activation": activation}
    theirs = nn.TransformerEncoderLayer(
        D, H, batch_first=True, norm_first=norm_first, **kwargs
    ).eval()
    _randomize(theirs, seed=1)
    ours = EncoderLayer(D, H, norm_first=norm_first, **kwargs).eval()
    load_torch_weights(ours, theirs)
    src, _, pad = _sources()
    close(ours(src, src_key_padding_mask=pad), theirs(src, src_key_padding_mask=pad))
    with torch.no_grad():
        close(
            _real(ours(src, src_key_padding_mask=pad)),
            _real(theirs(src, src_key_padding_mask=pad)),
        )


@pytest.mark.parametrize(("norm_first", "activation"), LAYER_SETTINGS)
def test_decoder_layer_equals_torch(norm_first, activation):
    kwargs = {"dim_feedforward": 16, "dropout": 0.1, "activation": activation}
    theirs = nn.TransformerDecoderLayer(
        D, H, batch_first=True, norm_first=norm_first, **kwargs
    ).eval()
    _randomize(theirs, seed=2)
    ours = DecoderLayer(D, H, norm_first=norm_first, **kwargs).eval()
    load_torch_weights(ours, theirs)
    memory, tgt, pad = _sources(seed=1)
    masks = {"tgt_mask": causal_mask(TGT_LENGTH), "memory_key_padding_mask": pad}
    close(ours(tgt, memory, **masks), theirs(tgt, memory, **masks))
    tgt_pad = padding_mask([4, 2, 3], TGT_LENGTH)  # with target pads too
    close(
        ours(tgt, memory, tgt_key_padding_mask=tgt_pad, **masks),
        theirs(tgt, memory, tgt_key_padding_mask=tgt_pad, **masks),
    )


def transformer_pair(norm_first, activation, dropout=0.1, seed=3):
    size = TransformerSize(D, H, 2, 2, 16, dropout, activation, 1e-5, norm_first)
    theirs = quiet(
        lambda: nn.Transformer(
            D, H, 2, 2, 16, dropout, activation, batch_first=True, norm_first=norm_first
        )
    )
    _randomize(theirs, seed)
    ours = Transformer(size)
    load_torch_weights(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize(("norm_first", "activation"), LAYER_SETTINGS)
def test_transformer_equals_torch(norm_first, activation):
    """The whole model, then its encoder alone; on the fast path the real positions only.

    Under ``torch.no_grad()`` in eval mode with a src_key_padding_mask torch's
    encoder may run on nested tensors and return zeros at the padded source
    positions (ours returns what LayerNorm makes of them). The padded positions
    are hidden from everything after the encoder, so the decoder's outputs are
    compared in full, and the encoder's only at each sentence's real positions.
    """
    ours, theirs = transformer_pair(norm_first, activation)
    ours.eval(), theirs.eval()
    src, tgt, pad = _sources(seed=2)
    masks = {
        "tgt_mask": causal_mask(TGT_LENGTH),
        "src_key_padding_mask": pad,
        "memory_key_padding_mask": pad,
    }
    close(ours(src, tgt, **masks), theirs(src, tgt, **masks))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are a prototype
        close(ours(src, tgt, **masks), theirs(src, tgt, **masks))
        close(
            _real(ours.encoder(src, src_key_padding_mask=pad)),
            _real(theirs.encoder(src, src_key_padding_mask=pad)),
        )


def _ours_from_torch_name(name):
    """torch's parameter name → our names and the rows each takes (the q/k/v split)."""
    prefix, _, last = name.rpartition(".")
    if last in ("in_proj_weight", "in_proj_bias"):
        kind = last.removeprefix("in_proj_")
        return [(f"{prefix}.{role}_proj.{kind}", i) for i, role in enumerate("qkv")]
    return [(name, None)]


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_gradients_equal_torchs_after_one_backward_pass(norm_first):
    ours, theirs = transformer_pair(norm_first, "gelu", dropout=0.0, seed=4)
    ours, theirs = ours.double().train(), theirs.double().train()
    src, tgt, pad = (t.double() if t.is_floating_point() else t for t in _sources(seed=4))
    masks = {
        "tgt_mask": causal_mask(TGT_LENGTH),
        "src_key_padding_mask": pad,
        "memory_key_padding_mask": pad,
    }
    probe = torch.randn(len(SRC_LENGTHS), TGT_LENGTH, D, dtype=torch.float64)
    (ours(src, tgt, **masks) * probe).sum().backward()
    (theirs(src, tgt, **masks) * probe).sum().backward()
    our_parameters = dict(ours.named_parameters())
    compared = set()
    for name, parameter in theirs.named_parameters():
        for our_name, part in _ours_from_torch_name(name):
            grad = parameter.grad if part is None else parameter.grad.chunk(3)[part]
            torch.testing.assert_close(our_parameters[our_name].grad, grad, rtol=0, atol=1e-10)
            assert bool(grad.abs().sum() > 0) or name.endswith(("in_proj_bias",))
            compared.add(our_name)
    assert compared == set(our_parameters)  # every parameter of ours had its twin


# --- the translation model and its key/value cache ----------------------------------------------

V = 13


def seq2seq(seed=0, learned_positions=False, norm_first=False):
    torch.manual_seed(seed)
    size = TransformerSize(16, 2, 2, 2, 32, 0.1, norm_first=norm_first)
    model = TransformerSeq2Seq(V, V, size, max_len=32, learned_positions=learned_positions)
    with torch.no_grad():  # sharper outputs, so that the decoders' choices really differ
        model.output.weight.mul_(4)
    return model.eval()


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    examples = []
    for n, m in [(6, 5), (2, 3), (4, 6), (1, 2)]:
        source = torch.randint(4, V, (n,), generator=g).tolist()
        target = [*torch.randint(4, V, (m - 1,), generator=g).tolist(), EOS]
        examples.append((source, target))
    return make_batch(examples)


def _step_logits(model, batch):
    """Logits (B, T, V) decoding one token at a time along the true target_in."""
    memory = model.encode(batch.source, batch.source_lengths)
    state = model.init_state(memory)
    logits = []
    for t in range(batch.target_in.shape[1]):
        step, state, weights = model.step(batch.target_in[:, t], state, memory)
        logits.append(step)
        assert weights.shape == batch.source.shape
        close(weights.sum(-1), torch.ones(batch.source.shape[0]), atol=1e-6)
    return torch.stack(logits, dim=1)


@pytest.mark.parametrize(
    ("learned_positions", "norm_first"), [(False, False), (True, False), (False, True)]
)
def test_cached_steps_equal_uncached_steps_and_teacher_forcing(learned_positions, norm_first):
    model = seq2seq(seed=1, learned_positions=learned_positions, norm_first=norm_first)
    batch = _batch(seed=1)
    with torch.no_grad():
        memory = model.encode(batch.source, batch.source_lengths)
        forced = model.teacher_forced(batch.target_in, memory)  # (B, T, V), all at once
        with cache_mode(model, True):
            cached = _step_logits(model, batch)
        with cache_mode(model, False):
            uncached = _step_logits(model, batch)
    assert model.use_cache  # cache_mode restores the setting
    close(cached, uncached)
    close(cached, forced)
    close(uncached, forced)


@pytest.mark.parametrize("seed", range(3))
def test_greedy_and_beam_search_decode_the_same_with_and_without_the_cache(seed):
    model = seq2seq(seed=seed, norm_first=seed == 2)
    batch = _batch(seed=seed)
    decoded = {}
    for use_cache in (True, False):
        with cache_mode(model, use_cache):
            decoded[use_cache] = (
                greedy_decode(model, batch.source, batch.source_lengths, max_len=7),
                beam_search(model, batch.source, batch.source_lengths, beam_size=3, max_len=7),
            )
    for cached, uncached in zip(decoded[True], decoded[False], strict=True):
        assert cached.tokens == uncached.tokens
        assert cached.finished == uncached.finished
        assert cached.log_probs == pytest.approx(uncached.log_probs, abs=1e-5)
    greedy, _ = decoded[True]
    for cached, uncached in zip(greedy.attention, decoded[False][0].attention, strict=True):
        close(cached, uncached)


def test_decode_steps_returns_b_by_steps_tokens_that_greedy_decoding_begins_with():
    model = seq2seq(seed=2)
    batch = _batch(seed=2)
    for use_cache in (True, False):
        with cache_mode(model, use_cache):
            tokens = decode_steps(model, batch.source, batch.source_lengths, steps=6)
            greedy = greedy_decode(model, batch.source, batch.source_lengths, max_len=6)
        assert tokens.shape == (batch.source.shape[0], 6)
        assert tokens.dtype == torch.long
        assert not bool(((tokens == PAD) | (tokens == SOS)).any())
        for row, out, done in zip(tokens.tolist(), greedy.tokens, greedy.finished, strict=True):
            assert row[: len(out)] == out
            if done:
                assert row[len(out)] == EOS


def test_source_padding_does_not_change_a_sentences_logits():
    model = seq2seq(seed=3)
    long = ([4, 5, 6, 7, 8, 9, 10], [6, 7, EOS])
    short = ([11, 5], [8, 9, EOS])
    together = make_batch([long, short])
    alone = make_batch([short])
    assert together.source.shape[1] > alone.source.shape[1]  # the short one is padded
    with torch.no_grad():
        both = model.teacher_forced(
            together.target_in, model.encode(together.source, together.source_lengths)
        )
        single = model.teacher_forced(
            alone.target_in, model.encode(alone.source, alone.source_lengths)
        )
        close(both[1], single[0])
        for use_cache in (True, False):
            with cache_mode(model, use_cache):
                close(_step_logits(model, together)[1], _step_logits(model, alone)[0])


# --- loading weights ----------------------------------------------------------------------------


def _encoder_pair():
    theirs = nn.TransformerEncoderLayer(D, H, 16, batch_first=True)
    return EncoderLayer(D, H, 16), theirs.state_dict()


def test_load_torch_weights_splits_in_proj_into_q_k_v_rows():
    ours, state = _encoder_pair()
    load_torch_weights(ours, state)
    W = state["self_attn.in_proj_weight"]
    assert torch.equal(ours.self_attn.q_proj.weight, W[:D])
    assert torch.equal(ours.self_attn.k_proj.weight, W[D : 2 * D])
    assert torch.equal(ours.self_attn.v_proj.weight, W[2 * D :])
    assert torch.equal(ours.self_attn.v_proj.bias, state["self_attn.in_proj_bias"][2 * D :])
    assert torch.equal(ours.linear1.weight, state["linear1.weight"])


def _missing(state):
    del state["linear1.weight"]
    return state


def _unexpected(state):
    state["linear3.weight"] = torch.zeros(3, 3)
    return state


def _wrong_shape(state):
    state["linear1.weight"] = torch.zeros(16, 4)
    return state


def _wrong_in_proj(state):
    state["self_attn.in_proj_weight"] = torch.zeros(3 * D, D + 1)
    return state


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_missing, r"missing linear1\.weight.*\(16, 8\)"),  # the name and the shape it needs
        (_unexpected, r"unexpected linear3\.weight"),
        (_wrong_shape, r"linear1\.weight: expected \(16, 8\), got \(16, 4\)"),
        (_wrong_in_proj, r"self_attn\.k_proj\.weight: expected \(8, 8\), got \(8, 9\)"),
    ],
)
def test_loading_weights_that_do_not_fit_names_the_weight_and_its_shape(spoil, message):
    ours, state = _encoder_pair()
    with pytest.raises(ValueError, match=message) as error:
        load_torch_weights(ours, spoil(state))
    assert "EncoderLayer" in str(error.value)
    with pytest.raises(ValueError, match=r"missing .*q_proj\.weight"):  # our names, not torch's
        load_state_dict_strict(ours, {k: v for k, v in ours.state_dict().items() if "q_" not in k})


# --- clear errors -------------------------------------------------------------------------------

_q, _k = torch.randn(2, 3, D), torch.randn(2, 5, D)


def _mha(**kwargs):
    return MultiHeadAttention(D, H, batch_first=True, **kwargs)


ERRORS = [
    (
        lambda: MultiHeadAttention(10, 3),
        ValueError,
        r"embed_dim \(d_model\) = 10 must be divisible",
    ),
    (lambda: MultiHeadAttention(8, 0), ValueError, "num_heads must be an int >= 1"),
    (lambda: EncoderLayer(10, 4), ValueError, "d_model = 10 must be divisible by nhead = 4"),
    (lambda: DecoderLayer(10, 4), ValueError, "d_model = 10 must be divisible by nhead = 4"),
    (
        lambda: Transformer(TransformerSize(10, 4, 1, 1, 8)),
        ValueError,
        "d_model = 10 must be divisible by nhead = 4",
    ),
    (
        lambda: EncoderLayer(8, 2, activation="tanh"),
        ValueError,
        "activation must be one of relu, gelu",
    ),
    (lambda: DecoderLayer(8, 2, activation="swish"), ValueError, "activation must be one of"),
    (
        lambda: _mha()(_q, _k, _k, attn_mask=torch.zeros(5, 3, dtype=torch.bool)),
        ValueError,
        r"attn_mask must be \(T, S\) = \(3, 5\) or \(B·h, T, S\) = \(4, 3, 5\)",
    ),
    (
        lambda: _mha()(_q, _k, _k, key_padding_mask=torch.zeros(2, 3, dtype=torch.bool)),
        ValueError,
        r"key_padding_mask must be \(B, S\) = \(2, 5\)",
    ),
    (
        lambda: _mha()(_q, _k, _k, key_padding_mask=torch.zeros(2, 5, dtype=torch.long)),
        TypeError,
        r"key_padding_mask must be bool \(True = ignore\) or float",
    ),
    (
        lambda: attention(_q, _k, _k, torch.zeros(3, 5, dtype=torch.int32)),
        TypeError,
        r"attn_mask must be bool \(True = ignore\) or float",
    ),
    (
        lambda: attention(_q, _k, _k, [[False] * 5] * 3),
        TypeError,
        "attn_mask must be a bool or float tensor, got list",
    ),
    (
        lambda: attention(_q, _k, _k, torch.zeros(4, 5, dtype=torch.bool)),
        ValueError,
        r"attn_mask \(4, 5\) does not broadcast",
    ),
    (lambda: attention(_q, _k[..., :4], _k), ValueError, "need one d_k"),
    (lambda: attention(_q, _k, _k[:, :4]), ValueError, "need one d_k"),
    (lambda: attention(_q[0, 0], _k, _k), ValueError, r"shaped \(…, T, d_k\)"),
    (
        lambda: _mha()(torch.randn(2, 3, 6), _k, _k),
        ValueError,
        r"query must be \(B, T, d_model\) with d_model = 8, got \(2, 3, 6\)",
    ),
    (
        lambda: MultiHeadAttention(D, H)(_q, _k[..., :6], _k),
        ValueError,
        r"key must be \(T, B, d_model\) with d_model = 8",
    ),
    (lambda: _mha()(_q, _k, _k[:1]), ValueError, "need one batch size B"),
    (lambda: LayerNorm(8)(torch.randn(2, 6)), ValueError, r"LayerNorm expects \(…, 8\) features"),
    (lambda: split_heads(torch.randn(1, 2, 10), 4), ValueError, "not divisible by num_heads = 4"),
    (lambda: sinusoidal_table(10, 7), ValueError, "d_model must be even"),
    (lambda: position_shift_matrix(1, 5), ValueError, "d_model must be even"),
    (lambda: SinusoidalPositionalEncoding(7), ValueError, "d_model must be even"),
    (lambda: causal_mask(0), ValueError, "size must be an int >= 1, got 0"),
    (lambda: causal_mask(2.0), ValueError, "size must be an int >= 1"),
    (
        lambda: SinusoidalPositionalEncoding(8, max_len=4)(torch.zeros(1, 5, 8)),
        ValueError,
        r"positions 0\.\.4 exceed the position table of max_len = 4",
    ),
    (
        lambda: LearnedPositionalEmbedding(8, max_len=4)(torch.zeros(1, 2, 8), offset=3),
        ValueError,
        "max_len = 4",
    ),
]


@pytest.mark.parametrize(("call", "error", "message"), ERRORS)
def test_bad_inputs_raise_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("steps", [0, -1, 2.0, True])
def test_decode_steps_needs_at_least_one_step(steps):
    model = seq2seq()
    batch = _batch()
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        decode_steps(model, batch.source, batch.source_lengths, steps)


def test_the_translation_model_names_token_ids_of_the_wrong_kind():
    model = seq2seq()
    batch = _batch()
    memory = model.encode(batch.source, batch.source_lengths)
    state = model.init_state(memory)
    with pytest.raises(
        ValueError, match=rf"tokens holds token id 99, outside the vocabulary 0\.\.{V - 1}"
    ):
        model.step(torch.full((4,), 99), state, memory)
    with pytest.raises(TypeError, match=r"tokens must be a \(B\) int64 tensor with B = 4"):
        model.step(torch.full((4,), 2.0), state, memory)
    with pytest.raises(
        TypeError, match=r"target_in must be a \(B, T\) int64 tensor .* torch\.float32"
    ):
        model(batch.source, batch.source_lengths, batch.target_in.float())
    with pytest.raises(ValueError, match=r"target_in holds token id 99"):
        model(batch.source, batch.source_lengths, batch.target_in.clamp(max=0) + 99)


def test_translation_past_max_len_names_max_len():
    model = seq2seq()
    source = torch.tensor([[4] * 33])  # max_len = 32 positions
    with pytest.raises(ValueError, match="max_len = 32"):
        model.encode(source, torch.tensor([33]))
    batch = _batch()
    with pytest.raises(ValueError, match="max_len = 32"):
        decode_steps(model, batch.source, batch.source_lengths, steps=33)


# Inputs that reach a torch error (or a silent wrong answer) before the module's own checks.
UNCHECKED_INPUTS = [
    (lambda: EncoderLayer(8, 0), ValueError, "nhead must be an int >= 1"),
    (lambda: DecoderLayer(8, 0), ValueError, "nhead must be an int >= 1"),
    (lambda: Transformer(TransformerSize(8, 0)), ValueError, "nhead must be an int >= 1"),
    (  # (T, B, d_model) inputs: the message must show the shape that was passed in
        lambda: MultiHeadAttention(D, H)(*[torch.randn(5, 2, 6)] * 3),
        ValueError,
        r"query must be \(T, B, d_model\) with d_model = 8, got \(5, 2, 6\)",
    ),
    (
        lambda: MultiHeadAttention(D, H)(*[torch.randn(8)] * 3),
        ValueError,
        r"query must be \(T, B, d_model\)",
    ),
    (
        lambda: _mha()(_q, _k, _k, key_padding_mask=[[False] * 5] * 2),
        TypeError,
        "key_padding_mask must be a bool or float tensor, got list",
    ),
    (
        lambda: _mha()(_q, _k, _k, attn_mask=[[False] * 5] * 3),
        TypeError,
        "attn_mask must be a bool or float tensor, got list",
    ),
    (  # silently (2, 0, 8) today: table[-1:0] is empty and broadcasts away the time axis
        lambda: SinusoidalPositionalEncoding(8, 10)(torch.randn(2, 1, 8), offset=-1),
        ValueError,
        "offset",
    ),
    (
        lambda: LearnedPositionalEmbedding(8, 10)(torch.randn(2, 1, 8), offset=-1),
        ValueError,
        "offset",
    ),
    # sizes that torch takes or fails on with a negative-dimension error
    (lambda: LayerNorm(0), ValueError, "normalized_shape must be an int >= 1, got 0"),
    (lambda: LayerNorm(-3), ValueError, "normalized_shape must be an int >= 1, got -3"),
    (lambda: LearnedPositionalEmbedding(8, -1), ValueError, "max_len must be an int >= 1, got -1"),
    (lambda: position_shift_matrix(1, -2), ValueError, "d_model must be an int >= 2, got -2"),
    (lambda: TransformerSize(d_model=-8), ValueError, "d_model must be an int >= 1, got -8"),
    (
        lambda: TransformerSize(num_encoder_layers=-1),
        ValueError,
        "num_encoder_layers must be an int >= 0, got -1",
    ),
    (
        lambda: TransformerSize(dim_feedforward=-16),
        ValueError,
        "dim_feedforward must be an int >= 1",
    ),
    (
        lambda: TransformerSeq2Seq(0, 10, TransformerSize(8, 2, 1, 1, 16)),
        ValueError,
        r"source_vocab_size must be an int >= 4 \(the vocabulary starts with <pad>, <unk>, <sos>",
    ),
    (
        lambda: TransformerSeq2Seq(10, 3, TransformerSize(8, 2, 1, 1, 16)),
        ValueError,
        "target_vocab_size must be an int >= 4",
    ),
    (lambda: merge_heads([[1.0]]), TypeError, r"x must be a \(B, h, T, d_k\) tensor, got list"),
    (lambda: merge_heads(torch.ones(2, 3, 4)), ValueError, r"x must be a \(B, h, T, d_k\) tensor"),
    # a DecoderLayer names its own arguments, tgt and memory, not its attention's query and key
    (
        lambda: DecoderLayer(8, 2, 16, 0.0)(torch.ones(2, 3, 8), torch.ones(2, 4, 6)),
        ValueError,
        r"memory must be a \(B, S, d_model\) float tensor with d_model = 8, got \(2, 4, 6\)",
    ),
    (
        lambda: DecoderLayer(8, 2, 16, 0.0)(torch.ones(2, 3, 8), None),
        TypeError,
        r"memory must be a \(B, S, d_model\) float tensor with d_model = 8, got NoneType",
    ),
    (
        lambda: DecoderLayer(8, 2, 16, 0.0)(torch.ones(2, 3, 8).tolist(), torch.ones(2, 4, 8)),
        TypeError,
        r"tgt must be a \(B, T, d_model\) float tensor with d_model = 8, got list",
    ),
    (
        lambda: DecoderLayer(8, 2, 16, 0.0)(
            torch.ones(2, 3, 8, dtype=torch.long), torch.ones(2, 4, 8)
        ),
        TypeError,
        r"tgt must be a \(B, T, d_model\) float tensor .* got torch\.int64",
    ),
    (
        lambda: DecoderLayer(8, 2, 16, 0.0)(torch.ones(3, 8), torch.ones(2, 4, 8)),
        ValueError,
        r"tgt must be a \(B, T, d_model\) float tensor with d_model = 8, got \(3, 8\)",
    ),
    (
        lambda: Transformer(TransformerSize(8, 2, 1, 0, 16))(
            torch.ones(1, 4, 8), torch.ones(1, 3, 6)
        ),
        ValueError,
        r"tgt must be a \(B, T, d_model\) float tensor with d_model = 8",
    ),
    (
        lambda: EncoderLayer(8, 2, 16)(torch.ones(1, 4, 6)),
        ValueError,
        r"src must be a \(B, S, d_model\) float tensor with d_model = 8",
    ),
]


@pytest.mark.parametrize(("call", "error", "message"), UNCHECKED_INPUTS)
def test_inputs_torch_would_reject_obscurely_get_the_modules_own_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- the chapter's measuring functions -----------------------------------------------------------


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("name", list(PAPER_SIZES))
def test_parameter_count_formula_equals_torchs_transformer(name, shared):
    size = PAPER_SIZES[name]
    counts = transformer_parameter_count(size, PAPER_VOCAB_SIZE, shared)
    assert counts["total"] == torch_parameter_count(size, PAPER_VOCAB_SIZE, shared)
    assert counts["total"] == sum(v for k, v in counts.items() if k != "total")


def test_parameter_count_formula_equals_our_transformer():
    size = TransformerSize(16, 2, 2, 3, 24)
    counts = transformer_parameter_count(size, vocab_size=10)
    ours = sum(p.numel() for p in Transformer(size).parameters())
    assert ours == counts["encoder"] + counts["decoder"] + counts["final_norms"]


def test_softmax_jacobian_norm_is_the_frobenius_norm_of_autograds_jacobian():
    weights = torch.softmax(torch.randn(5, 7, dtype=torch.float64) * 3, dim=-1)
    expected = [
        torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), row.log()).norm()
        for row in weights  # softmax(log p) = p: the Jacobian at scores whose softmax is p
    ]
    close(softmax_jacobian_norm(weights), torch.stack(expected), atol=1e-12)


def test_why_scale_dot_products_have_variance_d_k_and_scaled_ones_variance_one():
    for row in why_scale(d_ks=(4, 64), keys=8, samples=500):
        assert row.variance == pytest.approx(row.d_k, rel=0.15)
        assert row.scaled_variance == pytest.approx(1.0, rel=0.15)
    small, large = why_scale(d_ks=(4, 256), keys=8, samples=500)
    assert large.max_weight > small.max_weight  # unscaled: the softmax saturates as d_k grows
    assert large.jacobian_norm < small.jacobian_norm


def test_saved_bytes_counts_what_autograd_keeps_for_backward():
    a, b = (torch.randn(10, requires_grad=True) for _ in range(2))
    assert saved_bytes(lambda: a.exp()) == 10 * 4  # exp keeps its output
    assert saved_bytes(lambda: a * b) == 2 * 10 * 4  # a product keeps both factors


def test_time_kv_cache_decodes_the_same_tokens_both_ways():
    model = seq2seq(seed=4)
    batch = _batch(seed=4)
    timing = time_kv_cache(model, batch.source, batch.source_lengths, steps=5, repeats=1)
    assert timing.steps == 5 and timing.identical
    assert timing.seconds_with > 0 and timing.seconds_without > 0


def test_the_training_cache_tells_post_norm_from_pre_norm_models():
    """9장's cache keys a trained model by its repr: norm_first and the activation must show."""
    post = EncoderLayer(8, 2, 16, norm_first=False)
    pre = EncoderLayer(8, 2, 16, norm_first=True)
    gelu = EncoderLayer(8, 2, 16, activation="gelu")
    assert len({repr(post), repr(pre), repr(gelu)}) == 3


def test_bad_input_is_named_where_torch_would_broadcast_or_fail_deep_inside():
    layer = DecoderLayer(8, 2, 16, 0.0)
    with pytest.raises(ValueError, match="one batch size B"):
        layer(torch.ones(2, 3, 8), torch.ones(1, 4, 8))  # a memory of batch 1 for 2 targets
    with pytest.raises(TypeError, match="memory must be"):
        layer(torch.ones(2, 3, 8), None)
    model = Transformer(TransformerSize(8, 2, 1, 1, 16, 0.0))
    with pytest.raises(ValueError, match="one batch size B"):
        model(torch.ones(1, 4, 8), torch.ones(2, 3, 8))
    with pytest.raises(ValueError, match="at least one key"):
        attention(torch.ones(1, 2, 4), torch.ones(1, 0, 4), torch.ones(1, 0, 4))
    with pytest.raises(ValueError, match="do not broadcast"):
        attention(torch.ones(2, 2, 4), torch.ones(3, 5, 4), torch.ones(3, 5, 4))
    with pytest.raises(ValueError, match="vocab_size must be an int >= 1"):
        transformer_parameter_count(TransformerSize(), -5)
    with pytest.raises(TypeError, match="size must be a TransformerSize"):
        transformer_parameter_count(512, 100)
    with pytest.raises(ValueError, match="max_len must be an int >= 0"):
        sinusoidal_table(-1, 4)
    with pytest.raises(TypeError, match=r"theirs a torch\.nn module or its state dict"):
        load_torch_weights(LayerNorm(4), 5)
    with pytest.raises(ValueError, match=r"x must be a \(B, T, d_model\) tensor"):
        split_heads(torch.ones(5), 2)
    with pytest.raises(ValueError, match="num_heads must be an int >= 1"):
        split_heads(torch.ones(1, 2, 4), 0)


def test_layer_norm_and_positions_name_bad_input():
    with pytest.raises(ValueError, match=r"LayerNorm expects \(…, 4\) features, got \(\)"):
        LayerNorm(4)(torch.tensor(1.0))
    for encoding in (SinusoidalPositionalEncoding(8, 10), LearnedPositionalEmbedding(8, 10)):
        with pytest.raises(ValueError, match=r"x must be a \(B, T, d_model = 8\) tensor"):
            encoding(torch.ones(1, 3, 6))
        with pytest.raises(ValueError, match="got list"):
            encoding([[1.0]])
        with pytest.raises(ValueError, match="offset must be an int >= 0"):
            encoding(torch.ones(1, 3, 8), -1)


def test_prediction_confidence_is_a_hand_count_over_real_target_positions():
    from course_utils.experiments.ch11_transformer import prediction_confidence
    from course_utils.seq2seq import PAD, allowed_log_probs

    model = seq2seq(seed=3)
    g = torch.Generator().manual_seed(5)
    examples = []
    for n, m in [(6, 5), (2, 3), (4, 6), (1, 2), (3, 4)]:
        source = torch.randint(4, V, (n,), generator=g).tolist()
        examples.append((source, [*torch.randint(4, V, (m - 1,), generator=g).tolist(), EOS]))
    got = prediction_confidence(model, examples, batch_size=2)  # batches of 2, 2 and 1
    tops, hits, refs = [], [], []
    with torch.no_grad():
        for source, target in examples:  # one sentence at a time, no padding at all
            batch = make_batch([(source, target)])
            logits = model(batch.source, batch.source_lengths, batch.target_in)[0]  # (T, V)
            probs = allowed_log_probs(logits).exp()
            assert not bool((batch.target_out == PAD).any())
            for t, y in enumerate(target):
                tops.append(float(probs[t].max()))
                hits.append(float(int(probs[t].argmax()) == y))
                refs.append(float(probs[t, y]))
    assert got.top_probability == pytest.approx(sum(tops) / len(tops), rel=1e-6)
    assert got.accuracy == pytest.approx(sum(hits) / len(hits))
    assert got.reference_probability == pytest.approx(sum(refs) / len(refs), rel=1e-6)
    with pytest.raises(ValueError, match="examples is empty"):
        prediction_confidence(model, [])
    with pytest.raises(ValueError, match="batch_size"):
        prediction_confidence(model, examples, batch_size=0)


def test_learned_positions_after_refuses_a_step_count_that_is_not_positive():
    from course_utils.experiments.ch11_transformer import learned_positions_after

    with pytest.raises(ValueError, match="steps"):
        learned_positions_after(None, None, steps=0)  # the count is checked first
