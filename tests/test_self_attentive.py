"""10장: the structured self-attention of Lin et al. (2017), its penalty, and the chapter's data.

The attention layer is checked against the paper's formula written out with
NumPy one sentence at a time (only its real tokens, no mask), against
``torch.autograd.gradcheck`` in float64, and for the invariants every
attention must keep (hypothesis): each hop sums to 1, padding gets exactly
zero weight, and padding never changes what the real tokens get.
"""

import itertools
import math

import matplotlib
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from course_utils.experiments.ch10_attention import (
    CONSTITUTION_MIN_LINES,
    SelfAttentiveConfig,
    constitution_chapter_lines,
    encode_lines,
    plot_hops,
    run_penalty_experiment,
    self_attentive_config,
)
from course_utils.self_attentive import (
    SelfAttentiveClassifier,
    StructuredSelfAttention,
    attention_penalty,
    hop_distinctness,
)
from course_utils.vocab import Vocab

matplotlib.use("Agg")


def padded_batch(lengths, width, size=6, seed=0, dtype=torch.float32):
    """States (B, T, size) with random values everywhere, and the mask of each length."""
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(len(lengths), width, size, generator=generator, dtype=dtype)
    mask = torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
    return h, mask


def reference_attention(layer, h_row):
    """The paper's A = softmax(W_s2 tanh(W_s1 H^T)) and M = A H for one sentence, in NumPy."""
    w_s1 = layer.w_s1.detach().double().numpy()
    w_s2 = layer.w_s2.detach().double().numpy()
    h = h_row.detach().double().numpy()  # (n, 2u), real tokens only
    scores = w_s2 @ np.tanh(w_s1 @ h.T)  # (r, n)
    a = np.exp(scores - scores.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    return a @ h, a


# --- the attention layer ---------------------------------------------------------------------


def test_attention_matches_the_papers_formula_one_sentence_at_a_time():
    torch.manual_seed(0)
    layer = StructuredSelfAttention(input_size=6, attention_size=5, hops=3)
    lengths = [7, 3, 1, 5]
    h, mask = padded_batch(lengths, width=7)
    m, a = layer(h, mask)  # (B, r, 2u), (B, r, T)
    assert m.shape == (4, 3, 6) and a.shape == (4, 3, 7)
    for row, n in enumerate(lengths):
        m_ref, a_ref = reference_attention(layer, h[row, :n])
        np.testing.assert_allclose(a[row, :, :n].detach().numpy(), a_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m[row].detach().numpy(), m_ref, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    extra=st.integers(0, 4),
    hops=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_hops_sum_to_one_and_padding_gets_exactly_zero_weight(lengths, extra, hops, seed):
    torch.manual_seed(seed)
    layer = StructuredSelfAttention(input_size=6, attention_size=4, hops=hops)
    h, mask = padded_batch(lengths, max(lengths) + extra, seed=seed)
    _, a = layer(h, mask)
    torch.testing.assert_close(a.sum(dim=-1), torch.ones(len(lengths), hops))
    assert bool((a.masked_select(mask[:, None, :].expand_as(a)) == 0).all())
    assert bool((a >= 0).all())


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    extra=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_padding_length_and_content_do_not_change_the_real_positions(lengths, extra, seed):
    torch.manual_seed(seed)
    layer = StructuredSelfAttention(input_size=6, attention_size=4, hops=3)
    width = max(lengths)
    h, mask = padded_batch(lengths, width, seed=seed)
    m, a = layer(h, mask)
    # Longer padding, filled with large random values instead of the old pads.
    longer, longer_mask = padded_batch(lengths, width + extra, seed=seed + 1)
    longer = longer * 100
    longer[:, :width][~mask] = h[~mask]
    m_long, a_long = layer(longer, longer_mask)
    torch.testing.assert_close(m_long, m, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a_long[:, :, :width], a, rtol=1e-5, atol=1e-6)


def test_attention_gradients_match_finite_differences_in_float64():
    torch.manual_seed(0)
    layer = StructuredSelfAttention(input_size=4, attention_size=3, hops=2).double()
    h, mask = padded_batch([5, 2, 4], width=5, size=4, dtype=torch.float64)
    h.requires_grad_(True)

    def both(h, w_s1, w_s2):  # M and A as functions of the states and both weights
        return torch.func.functional_call(layer, {"w_s1": w_s1, "w_s2": w_s2}, (h, mask))

    inputs = (h, layer.w_s1.detach().clone(), layer.w_s2.detach().clone())
    for tensor in inputs:
        tensor.requires_grad_(True)
    assert torch.autograd.gradcheck(both, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


def test_a_single_hop_without_mask_is_a_softmax_over_every_position():
    torch.manual_seed(0)
    layer = StructuredSelfAttention(input_size=6, attention_size=4, hops=1)
    h, _ = padded_batch([5, 5], width=5)
    _, a = layer(h)
    _, with_empty_mask = layer(h, torch.zeros(2, 5, dtype=torch.bool))
    torch.testing.assert_close(a, with_empty_mask)
    _, a_ref = reference_attention(layer, h[1])
    np.testing.assert_allclose(a[1].detach().numpy(), a_ref, rtol=1e-5, atol=1e-6)


# --- the penalty and the distinctness of the hops --------------------------------------------


@given(hops=st.integers(1, 6), extra=st.integers(0, 5), seed=st.integers(0, 1000))
def test_penalty_is_zero_when_every_hop_is_one_hot_on_its_own_token(hops, extra, seed):
    positions = np.random.default_rng(seed).permutation(hops + extra)[:hops]
    a = torch.zeros(1, hops, hops + extra)
    a[0, torch.arange(hops), torch.as_tensor(positions)] = 1
    assert attention_penalty(a).item() == 0


@given(hops=st.integers(1, 8), length=st.integers(1, 6), data=st.data())
def test_penalty_is_r_times_r_minus_one_when_all_hops_are_the_same_one_hot_row(hops, length, data):
    position = data.draw(st.integers(0, length - 1))
    a = torch.zeros(1, hops, length)
    a[0, :, position] = 1
    assert attention_penalty(a).item() == hops * (hops - 1)


def test_penalty_equals_a_numpy_reference_averaged_over_the_batch():
    generator = torch.Generator().manual_seed(0)
    a = torch.softmax(torch.randn(5, 4, 9, generator=generator, dtype=torch.float64), dim=-1)
    per_sentence = [
        np.linalg.norm(x @ x.T - np.eye(4), "fro") ** 2 for x in a.numpy()
    ]  # brute force
    assert attention_penalty(a).item() == pytest.approx(np.mean(per_sentence), rel=1e-12)


def test_penalty_gradient_matches_finite_differences():
    generator = torch.Generator().manual_seed(1)
    a = torch.rand(2, 3, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(attention_penalty, (a,), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_distinctness_is_zero_for_identical_hops_and_one_for_disjoint_ones():
    same = torch.softmax(torch.randn(3, 1, 7), dim=-1).expand(3, 4, 7)
    assert hop_distinctness(same).item() == pytest.approx(0, abs=1e-7)
    disjoint = torch.eye(4)[None]  # four hops, each one-hot on its own token
    assert hop_distinctness(disjoint).item() == pytest.approx(1, abs=1e-7)


def test_distinctness_equals_scipys_jensen_shannon_divergence():
    a = torch.softmax(torch.randn(3, 4, 6, dtype=torch.float64), dim=-1)
    a[0, 1, :2] = 0  # zeros are allowed: 0 · log 0 = 0
    a[0, 1] /= a[0, 1].sum()
    expected = np.mean(
        [
            jensenshannon(x[i], x[j], base=2) ** 2  # scipy gives the square root
            for x in a.numpy()
            for i, j in itertools.combinations(range(4), 2)
        ]
    )
    assert hop_distinctness(a).item() == pytest.approx(expected, rel=1e-9)


# --- the classifier ----------------------------------------------------------------------------


def test_classifier_logits_do_not_depend_on_padding_length_or_content():
    torch.manual_seed(0)
    model = SelfAttentiveClassifier(vocab_size=20, num_classes=3, hops=2).eval()
    tokens = torch.tensor([[5, 6, 7, 8, 0, 0], [9, 4, 0, 0, 0, 0]])
    mask = tokens == 0
    logits, a = model(tokens, mask)
    noisy = torch.randint(1, 20, (2, 9))  # longer, and random ids where the pads were
    noisy[:, :6][~mask] = tokens[~mask]
    noisy_mask = torch.ones(2, 9, dtype=torch.bool)
    noisy_mask[:, :6] = mask
    logits_noisy, a_noisy = model(noisy, noisy_mask)
    torch.testing.assert_close(logits_noisy, logits, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a_noisy[:, :, :6], a, rtol=1e-5, atol=1e-6)
    assert logits.shape == (2, 3) and a.shape == (2, 2, 6)


def test_classifier_reads_a_sentence_alone_as_it_reads_it_in_a_batch():
    torch.manual_seed(0)
    model = SelfAttentiveClassifier(vocab_size=20, num_classes=3, hops=2).eval()
    tokens = torch.tensor([[5, 6, 7, 8], [9, 4, 0, 0]])
    logits, _ = model(tokens, tokens == 0)
    alone, _ = model(tokens[1:, :2], torch.zeros(1, 2, dtype=torch.bool))
    torch.testing.assert_close(alone[0], logits[1], rtol=1e-5, atol=1e-6)


def test_classifier_refuses_padding_that_is_not_on_the_right():
    # Packing reads each row's first `length` positions: left padding would feed the pads to
    # the LSTM and drop tokens (a silently different answer), so it is refused.
    model = SelfAttentiveClassifier(vocab_size=20, num_classes=3, hops=2).eval()
    tokens = torch.tensor([[0, 0, 9, 4], [5, 6, 7, 8]])
    with pytest.raises(ValueError, match="must pad on the right"):
        model(tokens, tokens == 0)
    inside = torch.tensor([[9, 0, 4, 0]])
    with pytest.raises(ValueError, match="must pad on the right"):
        model(inside, inside == 0)
    with pytest.raises(ValueError, match="key_padding_mask must be bool"):
        model(tokens, (tokens == 0).long())


# --- the data ---------------------------------------------------------------------------------


def test_constitution_lines_are_clauses_of_the_larger_chapters_without_their_numbers():
    rows = constitution_chapter_lines()
    labels = list(dict.fromkeys(label for _, label in rows))
    assert labels == ["국민의 권리와 의무", "국회", "정부", "법원"]
    assert all(sum(c == name for _, c in rows) >= CONSTITUTION_MIN_LINES for name in labels)
    assert ("대한민국은 민주공화국이다.", "총강") not in rows  # 총강 is too small
    starts = [line[:4] for line, _ in rows]
    assert not any(s.startswith("제") and "조" in s for s in starts)  # no article numbers
    assert not any(line[0] in "①②③④⑤⑥⑦⑧⑨⑩" or line[0].isdigit() for line, _ in rows)
    assert ("국회의원의 수는 법률로 정하되, 200인 이상으로 한다.", "국회") in rows
    every = constitution_chapter_lines(min_lines=1)
    assert {label for _, label in every} >= {"총강", "경제", "지방자치", "헌법개정"}


def test_encode_lines_pads_with_the_pad_id_and_marks_the_pads():
    vocab = Vocab.build([list("가나다")])
    tokens, mask = encode_lines([list("가나다"), list("다")], vocab)
    assert tokens.tolist() == [[vocab["가"], vocab["나"], vocab["다"]], [vocab["다"], 0, 0]]
    assert mask.tolist() == [[False, False, False], [False, True, True]]


def test_the_large_run_is_bigger_and_sizes_are_checked():
    small, large = self_attentive_config("small"), self_attentive_config("large")
    assert large.hops > small.hops and large.epochs > small.epochs
    with pytest.raises(ValueError, match="'small' or 'large'"):
        self_attentive_config("huge")


# --- highlighted text -------------------------------------------------------------------------


def test_plot_hops_draws_one_cell_per_token_and_hop():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    a = torch.softmax(torch.randn(3, 5), dim=-1)
    scale = plot_hops(ax, list("국회의원은"), a, title="예")
    assert len(ax.patches) == 15 and len(ax.texts) == 15
    assert [t.get_text() for t in ax.get_yticklabels()] == ["홉 1", "홉 2", "홉 3"]
    assert scale.norm.vmax == pytest.approx(float(a.max()))
    plt.close(fig)


# --- bad input gets a clear error -------------------------------------------------------------


def test_attention_layer_rejects_bad_sizes_and_masks():
    with pytest.raises(ValueError, match="hops must be an int >= 1, got 0"):
        StructuredSelfAttention(6, 4, hops=0)
    with pytest.raises(ValueError, match="attention_size must be an int >= 1"):
        StructuredSelfAttention(6, 2.5, hops=2)
    layer = StructuredSelfAttention(6, 4, hops=2)
    h, mask = padded_batch([3, 2], width=3)
    with pytest.raises(ValueError, match=r"\(batch, seq_len, 6\), got \(3, 6\)"):
        layer(h[0])
    with pytest.raises(ValueError, match=r"\(batch, seq_len, 6\), got \(2, 3, 5\)"):
        layer(h[..., :5])
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len\) = \(2, 3\), got \(2, 4\)"):
        layer(h, torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"bool tensor \(True = padding\), got torch\.int64"):
        layer(h, mask.long())
    all_pad = mask.clone()
    all_pad[1] = True
    with pytest.raises(ValueError, match=r"rows \[1\] of key_padding_mask are all padding"):
        layer(h, all_pad)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda layer, h, m: layer(h.tolist()), ValueError, r"\(batch, seq_len, 6\), got list"),
        (lambda layer, h, m: layer(None), ValueError, r"\(batch, seq_len, 6\), got NoneType"),
        (
            lambda layer, h, m: layer(h.long()),
            TypeError,
            r"h must be a float tensor, got torch\.int64",
        ),
        (lambda layer, h, m: layer(h[:, :0]), ValueError, r"h has no positions \(seq_len = 0\)"),
        (
            lambda layer, h, m: layer(h, m.tolist()),
            TypeError,
            r"key_padding_mask must be a bool tensor \(True = padding\), got list",
        ),
    ],
)
def test_attention_layer_names_h_and_the_mask_of_the_wrong_kind(call, error, message):
    layer = StructuredSelfAttention(6, 4, hops=2)
    h, mask = padded_batch([3, 2], width=3)
    with pytest.raises(error, match=message):
        call(layer, h, mask)


def test_penalty_and_distinctness_reject_bad_attention():
    with pytest.raises(
        ValueError, match=r"\(batch, hops, seq_len\) with batch >= 1, .* got \(4, 5\)"
    ):
        attention_penalty(torch.rand(4, 5))
    with pytest.raises(ValueError, match=r"hops >= 1 and seq_len >= 1, got \(1, 0, 3\)"):
        attention_penalty(torch.empty(1, 0, 3))  # no hops: a penalty of 0 would mean nothing
    with pytest.raises(ValueError, match=r"hops >= 1 and seq_len >= 1, got \(1, 2, 0\)"):
        attention_penalty(torch.empty(1, 2, 0))
    with pytest.raises(TypeError, match=r"torch\.Tensor, got ndarray"):
        attention_penalty(np.ones((1, 2, 3)))
    with pytest.raises(ValueError, match="at least 2 hops to compare, got 1"):
        hop_distinctness(torch.ones(2, 1, 1))


def test_classifier_and_data_helpers_reject_bad_input():
    model = SelfAttentiveClassifier(vocab_size=10, num_classes=2)
    tokens = torch.tensor([[3, 4], [0, 0]])
    with pytest.raises(ValueError, match="at least one token that is not padding"):
        model(tokens, tokens == 0)
    with pytest.raises(ValueError, match=r"same shape, got \(2, 2\) and \(2, 3\)"):
        model(tokens, torch.zeros(2, 3, dtype=torch.bool))
    vocab = Vocab.build([list("가나")])
    with pytest.raises(ValueError, match="non-empty list of token lists"):
        encode_lines([], vocab)
    with pytest.raises(ValueError, match="at least one token"):
        encode_lines([list("가"), []], vocab)
    with pytest.raises(ValueError, match="min_lines must be an int >= 1, got 0"):
        constitution_chapter_lines(min_lines=0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda m: SelfAttentiveClassifier(0, 3),
            ValueError,
            r"vocab_size must be an int >= 2 \(<pad> is id 0, and a token\), got 0",
        ),
        (lambda m: SelfAttentiveClassifier(10, 0), ValueError, "num_classes must be an int >= 1"),
        (
            lambda m: m(torch.tensor([[5.0, 6.0]]), torch.zeros(1, 2, dtype=torch.bool)),
            TypeError,
            r"tokens must be an int64 \(torch\.long\) tensor of token ids, got torch\.float32",
        ),
        (
            lambda m: m([[5, 6]], torch.zeros(1, 2, dtype=torch.bool)),
            TypeError,
            "tokens must be an int64 .* got list",
        ),
        (
            lambda m: m(torch.tensor([[5, 99]]), torch.zeros(1, 2, dtype=torch.bool)),
            ValueError,
            "unknown token id 99 in tokens: ids must be in 0 … 9",
        ),
        (
            lambda m: m(torch.tensor([[5, 6]]), None),
            ValueError,
            r"key_padding_mask of the same shape, got \(1, 2\) and NoneType",
        ),
    ],
)
def test_classifier_names_bad_sizes_tokens_and_masks(call, error, message):
    model = SelfAttentiveClassifier(vocab_size=10, num_classes=2)
    with pytest.raises(error, match=message):
        call(model)


def test_experiment_and_plot_reject_bad_arguments():
    with pytest.raises(TypeError, match="SelfAttentiveConfig, got dict"):
        run_penalty_experiment({"hops": 4})
    with pytest.raises(ValueError, match="penalty_coefficient must be > 0"):
        run_penalty_experiment(SelfAttentiveConfig(penalty_coefficient=0.0))
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"\(hops, len\(tokens\)\) = \(r, 3\), got \(2, 4\)"):
        plot_hops(ax, list("국회는"), torch.rand(2, 4))
    plt.close(fig)


def test_penalty_of_the_chapters_worked_example():
    """The values the chapter prints: r = 4 hops over 6 tokens."""
    distinct = torch.zeros(1, 4, 6)
    distinct[0, range(4), [0, 2, 3, 5]] = 1
    same = torch.zeros(1, 4, 6)
    same[0, :, 1] = 1
    assert attention_penalty(distinct).item() == 0
    assert attention_penalty(same).item() == 4 * 3 == math.perm(4, 2)


def test_the_penalty_of_an_empty_batch_is_an_error_not_nan():
    with pytest.raises(ValueError, match="batch >= 1"):
        attention_penalty(torch.ones(0, 2, 5))
