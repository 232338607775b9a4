"""10장 어텐션: Bahdanau's and Luong's attention, the models built on them, and alignments.

Every attention function keeps the invariants of an attention over padded keys
(hypothesis): each row of weights sums to 1, padding gets exactly zero weight,
and neither the length nor the content of the padding changes what the real
positions get. The dot score equals PyTorch's ``scaled_dot_product_attention``;
Luong's general and concat scores equal their formulas written out with NumPy;
the gradients of the learned scores match finite differences in float64. The
models are checked for what the papers say each step reads: Bahdanau attends
from s_(i-1) and starts from tanh(W_s ←h_1); Luong attends from h_t, and only
input feeding passes h̃_(t-1) into the next step. (Teacher forcing against the
step loop, beam search and stopping rules are in ``test_seq2seq_models.py``.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.attention import (
    LUONG_SCORES,
    AdditiveAttention,
    BahdanauSeq2Seq,
    LuongAttention,
    LuongSeq2Seq,
    alignment_accuracy,
    dot_product_attention,
    forced_attention,
    masked_softmax,
)
from course_utils.experiments.ch09_seq2seq import (
    TranslationConfig,
    generated_data,
)
from course_utils.experiments.ch10_attention import (
    COMPARED_MODELS,
    run_attention_comparison,
)
from course_utils.seq2seq import (
    EOS,
    SOS,
    Seq2Seq,
    TrainConfig,
    greedy_decode,
    make_batch,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def padding_mask(lengths, width):
    """(B, width), True at the pads: key_padding_mask as in torch.nn.MultiheadAttention."""
    return torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]


def padded_keys(lengths, width, size, seed=0, junk=1.0, dtype=torch.float32):
    """Keys (B, width, size), random at the real positions and random × ``junk`` at the pads."""
    generator = torch.Generator().manual_seed(seed)
    keys = torch.randn(len(lengths), width, size, generator=generator, dtype=dtype)
    pads = torch.randn(keys.shape, generator=generator, dtype=dtype) * junk
    mask = padding_mask(lengths, width)
    return torch.where(mask[:, :, None], pads, keys), mask


def repadded(keys, mask, extra, seed, junk=100.0):
    """The same real keys with ``extra`` more pads, and new, large junk in every pad."""
    lengths = (~mask).sum(dim=1).tolist()
    longer, longer_mask = padded_keys(lengths, keys.shape[1] + extra, keys.shape[2], seed, junk)
    longer[:, : keys.shape[1]][~mask] = keys[~mask]
    return longer, longer_mask


def random_query(batch, queries, size, seed):
    return torch.randn(batch, queries, size, generator=torch.Generator().manual_seed(seed + 7))


def _attentions():
    """Every attention of the module as (query, keys, mask) → (context, weights), with its sizes."""
    torch.manual_seed(0)
    value_map = torch.randn(6, 3)  # dot_product_attention's values: a function of the keys

    def dot(query, keys, mask):
        return dot_product_attention(query, keys, keys @ value_map, mask, scale=0.5)

    return {  # name: (attention, query size, key size)
        "dot_product_attention": (dot, 6, 6),
        "AdditiveAttention": (AdditiveAttention(4, 6, 5), 4, 6),
        "LuongAttention-dot": (LuongAttention("dot", 6, 6), 6, 6),
        "LuongAttention-general": (LuongAttention("general", 4, 6), 4, 6),
        "LuongAttention-concat": (LuongAttention("concat", 4, 6), 4, 6),
    }


ATTENTIONS = _attentions()


# --- masked_softmax ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    extra=st.integers(0, 4),
    queries=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_masked_softmax_rows_sum_to_one_and_pads_get_exactly_zero(lengths, extra, queries, seed):
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths) + extra
    scores = torch.randn(len(lengths), queries, width, generator=generator) * 10
    mask = padding_mask(lengths, width)
    weights = masked_softmax(scores, mask)
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(lengths), queries))
    assert bool((weights.masked_select(mask[:, None, :].expand_as(weights)) == 0).all())
    for b, n in enumerate(lengths):  # the real positions: the softmax of their own scores
        torch.testing.assert_close(weights[b, :, :n], torch.softmax(scores[b, :, :n], -1))


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    extra=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_masked_softmax_ignores_the_number_and_scores_of_the_pads(lengths, extra, seed):
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths)
    scores = torch.randn(len(lengths), 2, width, generator=generator)
    mask = padding_mask(lengths, width)
    longer_mask = padding_mask(lengths, width + extra)
    junk = torch.randn(len(lengths), 2, width + extra, generator=generator) * 1e4
    longer = torch.where(longer_mask[:, None, :], junk, F.pad(scores, (0, extra)))
    weights = masked_softmax(scores, mask)
    longer_weights = masked_softmax(longer, longer_mask)
    torch.testing.assert_close(longer_weights[:, :, :width], weights)
    assert bool((longer_weights[:, :, width:] == 0).all())


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (torch.tensor([[False, False, True], [True, True, True]]), "hides every position"),
        (torch.tensor([False, False, True]), r"\(B, S\) = \(2, 3\)"),
        (torch.tensor([[0, 0, 1], [0, 1, 1]]), "must be a bool tensor"),
    ],
)
def test_masked_softmax_rejects_a_mask_it_cannot_apply(mask, message):
    # A row with nothing to attend to would come back as NaN; a (S,) mask would be
    # broadcast over the batch silently.
    with pytest.raises(ValueError, match=message):
        masked_softmax(torch.randn(2, 1, 3), mask)


def test_masked_softmax_without_a_mask_is_the_plain_softmax():
    scores = torch.randn(2, 3, 5)
    torch.testing.assert_close(masked_softmax(scores, None), torch.softmax(scores, -1))
    nothing_hidden = torch.zeros(2, 5, dtype=torch.bool)
    torch.testing.assert_close(masked_softmax(scores, nothing_hidden), torch.softmax(scores, -1))


# --- the invariants of every attention --------------------------------------------------------


@pytest.mark.parametrize("name", list(ATTENTIONS))
@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    extra=st.integers(0, 4),
    queries=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_attention_rows_sum_to_one_and_pads_get_exactly_zero_weight(
    name, lengths, extra, queries, seed
):
    attend, query_size, key_size = ATTENTIONS[name]
    keys, mask = padded_keys(lengths, max(lengths) + extra, key_size, seed, junk=100.0)
    query = random_query(len(lengths), queries, query_size, seed)
    with torch.no_grad():
        context, weights = attend(query, keys, mask)
    B, S = mask.shape
    assert weights.shape == (B, queries, S)
    assert context.shape[:2] == (B, queries)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, queries))
    assert bool((weights.masked_select(mask[:, None, :].expand_as(weights)) == 0).all())
    assert bool((weights >= 0).all())


@pytest.mark.parametrize("name", list(ATTENTIONS))
@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    extras=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_padding_length_and_content_do_not_change_the_real_positions(name, lengths, extras, seed):
    attend, query_size, key_size = ATTENTIONS[name]
    keys, mask = padded_keys(lengths, max(lengths), key_size, seed)
    query = random_query(len(lengths), 2, query_size, seed)
    with torch.no_grad():
        context, weights = attend(query, keys, mask)
        for i, extra in enumerate(extras):  # several pad lengths, each with new junk
            longer, longer_mask = repadded(keys, mask, extra, seed=seed + i + 1)
            context_long, weights_long = attend(query, longer, longer_mask)
            torch.testing.assert_close(context_long, context, rtol=1e-5, atol=1e-6)
            real = weights_long[:, :, : keys.shape[1]]
            torch.testing.assert_close(real, weights, rtol=1e-5, atol=1e-6)


def test_additive_attention_with_its_keys_projected_in_advance_is_the_same():
    layer = ATTENTIONS["AdditiveAttention"][0]
    keys, mask = padded_keys([5, 2, 3], 5, 6)
    query = random_query(3, 2, 4, seed=0)
    with torch.no_grad():
        plain = layer(query, keys, mask)
        precomputed = layer(query, keys, mask, projected_keys=layer.U(keys))
    for ours, theirs in zip(plain, precomputed, strict=True):
        torch.testing.assert_close(ours, theirs)


# --- the dot score against PyTorch --------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    extra=st.integers(0, 3),
    queries=st.integers(1, 4),
    size=st.integers(1, 8),
    scaled=st.booleans(),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_dot_product_attention_equals_torch_scaled_dot_product_attention(
    lengths, extra, queries, size, scaled, masked, seed
):
    keys, mask = padded_keys(lengths, max(lengths) + extra, size, seed, junk=10.0)
    B, S = mask.shape
    query = random_query(B, queries, size, seed)
    values = torch.randn(B, S, 3, generator=torch.Generator().manual_seed(seed + 1))
    scale = 1 / math.sqrt(size) if scaled else 1.0
    key_padding_mask = mask if masked else None
    context, weights = dot_product_attention(query, keys, values, key_padding_mask, scale)
    attend = ~mask[:, None, :] if masked else None  # SDPA's boolean mask: True = attend
    expected = F.scaled_dot_product_attention(query, keys, values, attn_mask=attend, scale=scale)
    torch.testing.assert_close(context, expected, rtol=0, atol=1e-5)
    identity = torch.eye(S).expand(B, S, S)  # with the identity as values, SDPA gives its weights
    expected_weights = F.scaled_dot_product_attention(
        query, keys, identity, attn_mask=attend, scale=scale
    )
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-5)


# --- Luong's scores written out by hand --------------------------------------------------------


def _softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def assert_matches_score_formula(layer, score, query_size=4, key_size=6, lengths=(5, 2, 4)):
    """``layer`` on a padded batch against softmax(score(h_t, h̄_s)) over each sentence's real keys."""
    keys, mask = padded_keys(list(lengths), max(lengths), key_size, seed=3, junk=50.0)
    query = random_query(len(lengths), 3, query_size, seed=3)
    with torch.no_grad():
        context, weights = layer(query, keys, mask)
    for b, n in enumerate(lengths):
        h_t = query[b].double().numpy()  # (T, H_q)
        h_s = keys[b, :n].double().numpy()  # (n, H_k): the real positions only, no mask
        a = _softmax(np.array([[score(q, k) for k in h_s] for q in h_t]))  # (T, n)
        np.testing.assert_allclose(weights[b, :, :n].numpy(), a, rtol=1e-5, atol=1e-6)
        assert bool((weights[b, :, n:] == 0).all())
        np.testing.assert_allclose(context[b].numpy(), a @ h_s, rtol=1e-5, atol=1e-6)


def test_luong_general_is_h_t_transposed_w_a_h_s():
    torch.manual_seed(1)
    layer = LuongAttention("general", query_size=4, key_size=6)
    W_a = layer.W_a.weight.detach().double().numpy()  # (H_q, H_k): h_tᵀ W_a h̄_s is defined
    assert W_a.shape == (4, 6)
    assert_matches_score_formula(layer, lambda h_t, h_s: h_t @ W_a @ h_s)


def test_luong_concat_is_v_a_transposed_tanh_of_w_a_times_the_concatenation():
    torch.manual_seed(2)
    layer = LuongAttention("concat", query_size=4, key_size=6)
    additive = layer.additive
    W_a = torch.cat([additive.W.weight, additive.U.weight], dim=1).detach().double().numpy()
    v_a = additive.v.weight[0].detach().double().numpy()  # (A,)
    assert W_a.shape == (4, 4 + 6)  # Luong's W_a acts on [h_t; h̄_s]
    assert_matches_score_formula(
        layer, lambda h_t, h_s: v_a @ np.tanh(W_a @ np.concatenate([h_t, h_s]))
    )


def test_luong_dot_is_h_t_transposed_h_s():
    layer = LuongAttention("dot", query_size=6, key_size=6)
    assert_matches_score_formula(layer, lambda h_t, h_s: h_t @ h_s, query_size=6)


# --- gradients against finite differences -------------------------------------------------------


def assert_gradcheck_with_parameters(layer, query_size, key_size):
    """gradcheck in float64 of (context, weights) in the query, the keys and every parameter."""
    layer = layer.double()
    keys, mask = padded_keys([4, 2, 3], 4, key_size, seed=5, dtype=torch.float64)
    query = torch.randn(3, 2, query_size, dtype=torch.float64)
    names = [name for name, _ in layer.named_parameters()]
    parameters = [p.detach().clone() for _, p in layer.named_parameters()]

    def attention(query, keys, *parameters):  # the layer as a function of its parameters too
        return torch.func.functional_call(
            layer, dict(zip(names, parameters, strict=True)), (query, keys, mask)
        )

    inputs = (query, keys, *parameters)
    for tensor in inputs:
        tensor.requires_grad_(True)
    assert torch.autograd.gradcheck(attention, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


def test_additive_attention_gradients_match_finite_differences():
    torch.manual_seed(0)
    assert_gradcheck_with_parameters(AdditiveAttention(3, 4, 5), 3, 4)


@pytest.mark.parametrize("score", ["general", "concat"])
def test_luong_attention_gradients_match_finite_differences(score):
    torch.manual_seed(0)
    assert_gradcheck_with_parameters(LuongAttention(score, 3, 4), 3, 4)


# --- what each model's decoder step reads --------------------------------------------------------


def _memory(model):
    batch = make_batch([([4, 5, 6, 7, 8], [EOS]), ([9, 4], [EOS]), ([5, 6, 10], [EOS])])
    return model.encode(batch.source, batch.source_lengths), batch


def test_bahdanau_starts_from_tanh_of_w_s_times_the_backward_first_state():
    torch.manual_seed(0)
    model = BahdanauSeq2Seq(11, 11, 8, 12, 10).eval()
    memory, batch = _memory(model)
    with torch.no_grad():
        (s_0,) = model.init_state(memory)
        backward_first = memory.outputs[:, 0, 6:]  # ←h_1: the backward half at the first word
        # W_s ←h_1 (+ a bias, which the paper leaves out of all its equations)
        torch.testing.assert_close(s_0, torch.tanh(model.init(backward_first)))
        for b, n in enumerate(batch.source_lengths.tolist()):  # padding changes nothing
            alone = model.encode(batch.source[b : b + 1, :n], batch.source_lengths[b : b + 1])
            torch.testing.assert_close(s_0[b : b + 1], model.init_state(alone)[0])


def test_bahdanau_step_attends_from_the_previous_state_s_i_minus_1():
    torch.manual_seed(0)
    model = BahdanauSeq2Seq(11, 11, 8, 12, 10).eval()
    memory, _ = _memory(model)
    tokens = torch.tensor([SOS, 5, 7])
    with torch.no_grad():
        (s_prev,) = model.init_state(memory)
        _, (s_i,), weights = model.step(tokens, (s_prev,), memory)
        context, expected = model.attention(s_prev[:, None], memory.outputs, memory.padding_mask)
        torch.testing.assert_close(weights, expected[:, 0])  # α_i from s_(i-1)
        y_prev = model.embedding(tokens)  # s_i = GRU([y_(i-1); c_i], s_(i-1))
        torch.testing.assert_close(s_i, model.rnn(torch.cat([y_prev, context[:, 0]], -1), s_prev))
        # Another s_(i-1) moves this step's weights; another y_(i-1) (read after them) does not.
        moved = model.step(tokens, (s_prev + torch.randn_like(s_prev),), memory)[2]
        assert not torch.allclose(moved, weights, atol=1e-4)
        same = model.step(torch.tensor([6, 6, 6]), (s_prev,), memory)[2]
        torch.testing.assert_close(same, weights, rtol=0, atol=0)


@pytest.mark.parametrize("score", LUONG_SCORES)
def test_luong_step_attends_from_the_current_state_h_t(score):
    torch.manual_seed(0)
    model = LuongSeq2Seq(11, 11, 8, 12, score=score).eval()
    memory, _ = _memory(model)
    tokens = torch.tensor([SOS, 5, 7])
    with torch.no_grad():
        state = model.init_state(memory)
        logits, (h_t, attentional), weights = model.step(tokens, state, memory)
        context, expected = model.attention(h_t[:, None], memory.outputs, memory.padding_mask)
        torch.testing.assert_close(weights, expected[:, 0])  # a_t from h_t, after the GRU
        h_tilde = torch.tanh(model.W_c(torch.cat([context[:, 0], h_t], -1)))  # tanh(W_c[c_t; h_t])
        torch.testing.assert_close(attentional, h_tilde)
        torch.testing.assert_close(logits, model.output(h_tilde))
        other = model.step(torch.tensor([6, 6, 6]), state, memory)[2]  # y_(t-1) moves h_t: a_t too
        assert not torch.allclose(other, weights, atol=1e-4)


@pytest.mark.parametrize("input_feeding", [True, False])
def test_only_input_feeding_passes_the_previous_attentional_state_to_the_gru(input_feeding):
    torch.manual_seed(0)
    model = LuongSeq2Seq(11, 11, 8, 12, score="general", input_feeding=input_feeding).eval()
    assert model.rnn.input_size == 8 + (12 if input_feeding else 0)  # [y_(t-1); h̃_(t-1)] or y_(t-1)
    memory, _ = _memory(model)
    tokens = torch.tensor([SOS, 5, 7])
    with torch.no_grad():
        h_prev, _ = model.init_state(memory)
        h_tilde_a, h_tilde_b = torch.randn(2, 3, 12)  # two different h̃_(t-1)
        out_a = model.step(tokens, (h_prev, h_tilde_a), memory)
        out_b = model.step(tokens, (h_prev, h_tilde_b), memory)
    h_a, h_b = out_a[1][0], out_b[1][0]
    if input_feeding:
        assert not torch.allclose(h_a, h_b, atol=1e-4)
    else:  # h_t = GRU(y_(t-1), h_(t-1)): h̃_(t-1) changes nothing of the step
        torch.testing.assert_close(h_a, h_b, rtol=0, atol=0)
        torch.testing.assert_close(out_a[0], out_b[0], rtol=0, atol=0)
        torch.testing.assert_close(out_a[2], out_b[2], rtol=0, atol=0)


# --- forced attention and alignment accuracy ----------------------------------------------------


SOURCES = [[4, 5, 6, 7, 8], [9, 4], [5, 6, 10], [7]]
MODELS = {
    "bahdanau": lambda: BahdanauSeq2Seq(11, 11, 8, 12, 10),
    "luong-general": lambda: LuongSeq2Seq(11, 11, 8, 12, score="general"),
    "luong-dot-no-feeding": lambda: LuongSeq2Seq(11, 11, 8, 12, "dot", input_feeding=False),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", list(MODELS))
def test_forced_attention_on_the_greedy_output_equals_greedy_decodings_weights(name, seed):
    torch.manual_seed(seed)
    model = MODELS[name]().eval()
    batch = make_batch([(s, [EOS]) for s in SOURCES])
    greedy = greedy_decode(model, batch.source, batch.source_lengths, max_len=6)
    targets = [[*tokens, EOS] for tokens in greedy.tokens]  # the reference: greedy's own output
    forced = forced_attention(model, SOURCES, targets)
    assert len(forced) == len(SOURCES)
    for i, (source, target) in enumerate(zip(SOURCES, targets, strict=True)):
        assert forced[i].shape == (len(target), len(source))  # T counts the <eos>
        torch.testing.assert_close(forced[i].sum(-1), torch.ones(len(target)))
        # greedy's rows: one per step it took (with its <eos> row when it finished)
        assert greedy.attention[i].shape[0] == len(greedy.tokens[i]) + greedy.finished[i]
        torch.testing.assert_close(forced[i][: greedy.attention[i].shape[0]], greedy.attention[i])


@pytest.mark.parametrize("name", list(MODELS))
def test_step_names_tokens_outside_the_target_vocabulary_or_of_the_wrong_kind(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    memory = model.encode(torch.tensor([[4, 5]]), torch.tensor([2]))
    state = model.init_state(memory)
    model.step(torch.tensor([SOS]), state, memory)  # a (B,) int64 id of the vocabulary: fine
    with pytest.raises(
        ValueError, match=r"tokens holds token id 99, outside the vocabulary 0\.\.10"
    ):
        model.step(torch.tensor([99]), state, memory)
    with pytest.raises(
        TypeError, match=r"tokens must be a \(B\) int64 tensor with B = 1, got torch"
    ):
        model.step(torch.tensor([2.0]), state, memory)
    with pytest.raises(
        ValueError, match=r"tokens must be a \(B\) int64 tensor with B = 1, got \(2,\)"
    ):
        model.step(torch.tensor([SOS, SOS]), state, memory)


def test_forced_attention_needs_a_model_with_attention():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="has no attention"):
        forced_attention(Seq2Seq(11, 11, 8, 12), [[4, 5]], [[6, EOS]])


def test_alignment_accuracy_counts_argmax_hits_and_skips_the_eos_row():
    weights = torch.tensor(
        [
            [0.7, 0.2, 0.1],  # argmax 0, gold 0: hit
            [0.1, 0.3, 0.6],  # argmax 2, gold 1: miss
            [0.1, 0.5, 0.4],  # argmax 1, gold 1 or 2: hit
            [0.0, 0.0, 1.0],  # the <eos> row: no gold alignment, skipped
        ]
    )
    assert alignment_accuracy([weights], [[(0,), (1,), (1, 2)]]) == pytest.approx(2 / 3)


def test_alignment_accuracy_skips_words_aligned_to_nothing():
    weights = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8]])
    assert alignment_accuracy([weights], [[(0,), (), (1,)]]) == 1.0
    assert alignment_accuracy([weights], [[(), (1,), ()]]) == 0.0


def test_alignment_accuracy_breaks_ties_towards_the_first_position_as_argmax_does():
    tie = torch.tensor([[0.4, 0.4, 0.2]])
    assert alignment_accuracy([tie], [[(0,)]]) == 1.0
    assert alignment_accuracy([tie], [[(1,)]]) == 0.0


def test_alignment_accuracy_pools_words_over_sentences_not_sentence_means():
    one_of_one = torch.tensor([[1.0, 0.0]])
    none_of_three = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    accuracy = alignment_accuracy([one_of_one, none_of_three], [[(0,)], [(1,), (1,), (1,)]])
    assert accuracy == pytest.approx(1 / 4)  # not (1 + 0) / 2


@pytest.mark.parametrize(
    ("weights", "alignments", "message"),
    [
        ([torch.eye(2)], [[(0,)], [(1,)]], "got 1 attention matrices but 2 alignments"),
        ([torch.ones(3)], [[(0,)]], r"weights\[0\] must be a \(T, S\) float tensor, got \(3,\)"),
        ([torch.eye(2)], [[(0,), (1,), (0,)]], "at least T = 3 rows"),
        ([torch.eye(2)], [[(), ()]], "no target word has a gold alignment"),
        ([], [], "no target word has a gold alignment"),
    ],
)
def test_alignment_accuracy_rejects_mismatched_inputs(weights, alignments, message):
    with pytest.raises(ValueError, match=message):
        alignment_accuracy(weights, alignments)


# --- clear errors -------------------------------------------------------------------------------


def _bad_call(call):
    keys, mask = padded_keys([3, 2], 3, 4)
    query = torch.randn(2, 1, 4)
    return lambda: call(query, keys, mask)


ATTENTION_ERRORS = [
    (lambda q, k, m: dot_product_attention(q, k[0], k[0]), r"keys must be \(B, S, H_k\)"),
    (lambda q, k, m: AdditiveAttention(4, 4, 3)(q, k.flatten(1)), r"keys must be \(B, S, H_k\)"),
    (lambda q, k, m: dot_product_attention(q[:1], k, k), r"query must be \(B, T, H_q\) with B = 2"),
    (
        lambda q, k, m: AdditiveAttention(4, 4, 3)(q[0], k),
        r"query must be \(B, T, H_q\) with B = 2",
    ),
    (lambda q, k, m: dot_product_attention(q, k, k, m[:, :2]), r"shaped like the keys' \(B, S\)"),
    (lambda q, k, m: dot_product_attention(q, k, k, m[None]), r"shaped like the keys' \(B, S\)"),
    (lambda q, k, m: dot_product_attention(q, k, k, m.long()), "must be a bool tensor"),
    (lambda q, k, m: AdditiveAttention(4, 4, 3)(q, k, m.float()), "must be a bool tensor"),
    (lambda q, k, m: dot_product_attention(q, k, k, m.tolist()), "got list"),
    (
        lambda q, k, m: LuongAttention("general", 4, 4)(q, k, m | torch.tensor([[0], [1]]).bool()),
        "hides every position of some row",
    ),
    (
        lambda q, k, m: dot_product_attention(q, k, k, torch.ones_like(m)),
        "hides every position of some row",
    ),
    (lambda q, k, m: dot_product_attention(q[..., :3], k, k), "needs query and keys of one size"),
    (
        lambda q, k, m: dot_product_attention(q, k, k[:, :2], m),
        r"values must be a \(B, S, H_v\) float tensor with B = 2, S = 3, got \(2, 2, 4\)",
    ),
    (  # no keys: nothing to attend to (the softmax of an empty row is an empty row, not weights)
        lambda q, k, m: dot_product_attention(q, k[:, :0], k[:, :0]),
        r"keys must hold at least one key position \(S >= 1\)",
    ),
    (
        lambda q, k, m: AdditiveAttention(4, 4, 3)(q, k[:, :0]),
        r"keys must hold at least one key position \(S >= 1\)",
    ),
    (
        lambda q, k, m: AdditiveAttention(4, 4, 3)(q[..., :3], k, m),
        r"query must be a \(B, T, query_size\) float tensor with B = 2, query_size = 4, got",
    ),
    (
        lambda q, k, m: AdditiveAttention(4, 6, 3)(q, k, m),
        r"keys must be a \(B, S, key_size\) float tensor with B = 2, S = 3, key_size = 6, got",
    ),
    (
        lambda q, k, m: AdditiveAttention(4, 4, 3)(q, k, m, torch.randn(2, 3, 5)),
        r"projected_keys \(U\(keys\)\) must be a \(B, S, A\) float tensor with B = 2, S = 3, A = 3",
    ),
    (
        lambda q, k, m: AdditiveAttention(4, 4, 3)(q, k, m, torch.randn(2, 2, 3)),
        r"projected_keys \(U\(keys\)\) must be .* got \(2, 2, 3\)",
    ),
]


@pytest.mark.parametrize(("call", "message"), ATTENTION_ERRORS)
def test_attention_rejects_bad_inputs_with_a_clear_message(call, message):
    with pytest.raises(ValueError, match=message):
        _bad_call(call)()


ATTENTION_TYPE_ERRORS = [
    (
        lambda q, k, m: dot_product_attention(q, k, k.tolist(), m),
        r"values must be a \(B, S, H_v\) float tensor with B = 2, S = 3, got list",
    ),
    (lambda q, k, m: dot_product_attention(q, k, None, m), "values must be .* got NoneType"),
    (
        lambda q, k, m: alignment_accuracy([[[0.7, 0.3]]], [[[0]]]),
        r"weights\[0\] must be a \(T, S\) float tensor, got list",
    ),
]


@pytest.mark.parametrize(("call", "message"), ATTENTION_TYPE_ERRORS)
def test_attention_names_an_argument_of_the_wrong_type(call, message):
    with pytest.raises(TypeError, match=message):
        _bad_call(call)()


def test_masked_softmax_of_no_keys_is_an_error():
    with pytest.raises(ValueError, match=r"scores must hold at least one key position"):
        masked_softmax(torch.randn(1, 2, 0), None)


SPECIALS = r"\(the vocabulary starts with <pad>, <unk>, <sos>, <eos>\), got"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AdditiveAttention(4, 6, 0), "attention_size must be an int >= 1, got 0"),
        (lambda: AdditiveAttention(0, 6, 5), "query_size must be an int >= 1, got 0"),
        (
            lambda: BahdanauSeq2Seq(0, 11, 8, 12),
            f"source_vocab_size must be an int >= 4 {SPECIALS} 0",
        ),
        (
            lambda: BahdanauSeq2Seq(11, 3, 8, 12),
            f"target_vocab_size must be an int >= 4 {SPECIALS} 3",
        ),
        (lambda: LuongSeq2Seq(0, 11, 8, 12), f"source_vocab_size must be an int >= 4 {SPECIALS} 0"),
        (lambda: LuongSeq2Seq(11, 0, 8, 12), f"target_vocab_size must be an int >= 4 {SPECIALS} 0"),
        (lambda: LuongAttention("dot", 4, 6), "the dot score needs query_size == key_size"),
        (lambda: LuongAttention("bilinear", 4, 4), "score must be one of dot, general, concat"),
        (lambda: LuongSeq2Seq(11, 11, 8, 12, score="additive"), "score must be one of"),
        (lambda: BahdanauSeq2Seq(11, 11, 8, 13), "hidden_size must be even"),
        (lambda: LuongSeq2Seq(11, 11, 8, 13), "hidden_size must be even"),
    ],
)
def test_models_reject_bad_settings_with_a_clear_message(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# --- the comparison -----------------------------------------------------------------------------

TINY = TranslationConfig(200, 10, 10, 2, 3, 1, 8, 16, TrainConfig(epochs=1, batch_size=64))


def test_comparison_rejects_an_unknown_model_before_training():
    data, splits = generated_data(TINY)
    with pytest.raises(ValueError, match="unknown model 'transformer': expected some of"):
        run_attention_comparison(data, splits, TINY, names=("luong", "transformer"))
    assert COMPARED_MODELS == ("seq2seq", "bahdanau", "luong")


@pytest.mark.parametrize("positions", [[5], [-1], [0, 2]])
def test_alignment_accuracy_refuses_gold_positions_outside_the_source(positions):
    with pytest.raises(ValueError, match=r"gold source positions must be in 0 … 1"):
        alignment_accuracy([torch.tensor([[0.5, 0.5]])], [[positions]])


def test_models_trained_in_the_background_are_the_ones_trained_here(tmp_path, monkeypatch):
    """start_attention_comparison's workers fill the cache that train_model then loads."""
    from course_utils import runs
    from course_utils.experiments.ch09_seq2seq import train_model
    from course_utils.experiments.ch10_attention import (
        new_bahdanau,
        new_luong,
        start_attention_comparison,
    )

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path / "background"))
    data, _ = generated_data(TINY)
    with pytest.raises(TypeError, match="names must be a list"):
        start_attention_comparison(data, TINY, names="luong")
    started = start_attention_comparison(data, TINY, names=("bahdanau", "luong"))
    assert started == (runs.background_workers() >= 2)
    loaded = {}
    for name, make in (("bahdanau", new_bahdanau), ("luong", new_luong)):
        model = make(data, TINY)
        history = train_model(model, data, TINY.training, show_progress=False)
        loaded[name] = (model.state_dict(), history.train_loss)
    assert not start_attention_comparison(data, TINY, names=("bahdanau", "luong"))  # cached
    monkeypatch.setenv("COURSE_CACHE", "off")
    for name, make in (("bahdanau", new_bahdanau), ("luong", new_luong)):
        model = make(data, TINY)
        history = runs.single_threaded(train_model, model, data, TINY.training, False)
        state, losses = loaded[name]
        assert history.train_loss == losses
        assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
