"""fastText's n-grams, hashes and vectors against gensim; GloVe's objective against torch autograd."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse
from conftest import ROOT
from gensim.models import FastText
from gensim.models.fasttext import ft_ngram_hashes
from gensim.models.fasttext_inner import compute_ngrams, compute_ngrams_bytes, ft_hash_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.subword_vectors import (
    SubwordConfig,
    char_ngrams,
    compare_unseen_eojeols,
    eojeol_morphemes,
    fasttext_hash,
    fasttext_vector,
    glove_loss_and_grads,
    glove_weight,
    ngram_buckets,
    pair_weight_shares,
    split_eojeols,
)

WORDS = ["where", "국민은", "국민으로부터", "가", "", "ab", "제9조", "naïve", "🙂웃음"]
RANGES = [(3, 6), (1, 1), (1, 2), (2, 4), (1, 6), (5, 5), (4, 9)]
words = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)


@pytest.mark.parametrize(("min_n", "max_n"), RANGES)
def test_char_ngrams_are_gensims_fasttext_ngrams_in_the_same_order(min_n, max_n):
    for word in WORDS:
        expected = [g.decode("utf-8") for g in compute_ngrams_bytes(word, min_n, max_n)]
        assert char_ngrams(word, min_n, max_n) == expected, word


@given(words, st.integers(1, 4), st.integers(0, 3))
@settings(max_examples=200, deadline=None)
def test_char_ngrams_match_gensim_for_any_word(word, min_n, extra):
    expected = [g.decode("utf-8") for g in compute_ngrams_bytes(word, min_n, min_n + extra)]
    assert char_ngrams(word, min_n, min_n + extra) == expected


def test_char_ngrams_have_boundary_marks_and_the_whole_word():
    assert char_ngrams("where", 3, 3) == ["<wh", "whe", "her", "ere", "re>"]
    assert "<where>" not in char_ngrams("where")  # 7 characters with the marks: longer than 6
    assert "<국민은>" in char_ngrams("국민은")
    # gensim's str version keeps the lone marks when min_n = 1; training uses the bytes version.
    assert set(compute_ngrams("ab", 2, 4)) == set(char_ngrams("ab", 2, 4))
    assert "<" not in char_ngrams("ab", 1, 2) and ">" not in char_ngrams("ab", 1, 2)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
@settings(max_examples=300, deadline=None)
def test_fasttext_hash_is_gensims_ft_hash_bytes(ngram):
    assert fasttext_hash(ngram) == ft_hash_bytes(ngram.encode("utf-8"))


def test_textbook_fnv1a_agrees_on_ascii_and_differs_on_hangul():
    def textbook(text):
        h = 2166136261
        for byte in text.encode("utf-8"):  # bytes read unsigned
            h = (h ^ byte) * 16777619 & 0xFFFFFFFF
        return h

    assert textbook("<wh") == fasttext_hash("<wh") == ft_hash_bytes(b"<wh")
    assert textbook("<국민") != fasttext_hash("<국민") == ft_hash_bytes("<국민".encode())


@pytest.mark.parametrize("bucket", [1, 7, 1000, 2_000_000])
def test_ngram_buckets_are_gensims_ft_ngram_hashes(bucket):
    for word in WORDS:
        for min_n, max_n in RANGES:
            assert ngram_buckets(word, bucket, min_n, max_n) == ft_ngram_hashes(
                word, min_n, max_n, bucket
            )


@pytest.fixture(scope="module")
def tiny_fasttext():
    sentences = [
        ["국민은", "법률이", "정하는", "바에", "의하여", "국방의", "의무를", "진다"],
        ["모든", "국민은", "법률", "앞에", "평등하다"],
        ["국민의", "자유와", "권리는", "법률로써", "제한할", "수", "있다"],
    ] * 3
    return FastText(
        sentences, vector_size=8, window=3, min_count=1, sg=1, epochs=3, bucket=500,
        min_n=2, max_n=4, workers=1, seed=3,
    )  # fmt: skip


def test_unseen_word_vector_is_the_mean_of_its_ngram_rows_as_in_gensim(tiny_fasttext):
    wv = tiny_fasttext.wv
    for word in ["국민에서는", "법률에", "자유롭게", "xyz"]:
        assert word not in wv.key_to_index
        ours = fasttext_vector(word, wv.vectors_ngrams, wv.min_n, wv.max_n)
        np.testing.assert_allclose(ours, wv[word], atol=1e-6)


def test_known_word_vector_averages_its_own_vector_with_its_ngrams_as_in_gensim(tiny_fasttext):
    wv = tiny_fasttext.wv
    for i, word in enumerate(wv.index_to_key):
        ours = fasttext_vector(
            word, wv.vectors_ngrams, wv.min_n, wv.max_n, word_vector=wv.vectors_vocab[i]
        )
        np.testing.assert_allclose(ours, wv[word], atol=1e-6)


def test_fasttext_functions_reject_bad_input():
    with pytest.raises(TypeError, match="word must be a str"):
        char_ngrams(3)
    with pytest.raises(ValueError, match="min_n must be an int >= 1"):
        char_ngrams("국민", 0, 3)
    with pytest.raises(ValueError, match="max_n must be >= min_n"):
        char_ngrams("국민", 4, 3)
    with pytest.raises(ValueError, match="bucket must be an int >= 1"):
        ngram_buckets("국민", 0)
    with pytest.raises(TypeError, match="word must be a str"):
        fasttext_hash(b"<wh")
    table = np.zeros((10, 4))
    with pytest.raises(ValueError, match=r"ngram_vectors must be \(bucket, D\)"):
        fasttext_vector("국민", np.zeros(10))
    with pytest.raises(ValueError, match=r"word_vector must be \(D,\) = \(4,\)"):
        fasttext_vector("국민", table, word_vector=np.zeros(3))
    with pytest.raises(ValueError, match="has no n-grams"):
        fasttext_vector("", table)
    with pytest.raises(TypeError, match="word must be a str"):
        split_eojeols(None)


def test_eojeol_morphemes_puts_each_morpheme_in_its_eojeol():
    line = "②모든 국민은 법률 앞에, 평등하다."
    morphemes = ["②", "모든", "국민", "은", "법률", "앞", "에", ",", "평등하다", "."]
    assert eojeol_morphemes(line, morphemes) == [
        ("모든", ["모든"]), ("국민은", ["국민", "은"]), ("법률", ["법률"]),
        ("앞에", ["앞", "에"]), ("평등하다", ["평등하다"]),
    ]  # fmt: skip
    assert eojeol_morphemes("국민은", ["국민", "는"]) == [("국민은", ["국민"])]  # not in the line


def test_split_eojeols_drops_punctuation_and_circled_numbers():
    line = "②대한민국의 주권은 국민에게 있고, 모든 권력은 국민으로부터 나온다."
    assert split_eojeols(line) == [
        "대한민국의", "주권은", "국민에게", "있고", "모든", "권력은", "국민으로부터", "나온다",
    ]  # fmt: skip


def test_subword_config_rejects_bad_settings():
    with pytest.raises(ValueError, match="epochs must be an int >= 1"):
        SubwordConfig(epochs=0)
    with pytest.raises(ValueError, match="max_n must be >= min_n"):
        SubwordConfig(min_n=4, max_n=3)
    with pytest.raises(ValueError, match="bucket must be an int >= 1"):
        SubwordConfig(bucket=True)


# --- the experiment on a corpus small enough to check by hand ------------------------

LINES = [
    "국민은 법률 앞에 평등하다",
    "국민의 권리는 법률로 정한다",
    "국가는 국민의 자유를 보장한다",
    "대통령은 국민에게 책임을 진다",
    "국민으로부터 나온 권력은 법률로 제한된다",  # held out: every 5th line
] * 4


def _toy_morphs(word):
    for stem in ("국민", "법률", "국가", "대통령", "권리", "권력", "자유", "책임"):
        if word.startswith(stem) and word != stem:
            return [stem, word[len(stem) :]]
    return [word]


def test_compare_unseen_eojeols_counts_coverage_as_documented():
    config = SubwordConfig(vector_size=8, epochs=2, bucket=100_000)
    result = compare_unseen_eojeols(LINES, [_toy_morphs_line(line) for line in LINES], config)
    train = [line.split() for i, line in enumerate(LINES) if i % 5 != 4]
    held_out = [w for i, line in enumerate(LINES) if i % 5 == 4 for w in line.split()]
    assert result.held_out_tokens == len(held_out) == 20
    assert result.unseen == ["국민으로부터", "나온", "권력은", "제한된다"]
    assert result.unseen_tokens == 4 * 4
    assert result.covered_tokens["eojeol_word2vec"] == len(held_out) - result.unseen_tokens
    morpheme_vocab = result.morpheme_word2vec.wv.key_to_index
    expected = sum(all(m in morpheme_vocab for m in _toy_morphs(w)) for w in held_out)
    assert result.covered_tokens["morpheme_word2vec"] == expected == 4  # only 법률 + 로 were seen
    trained = {b for sentence in train for w in sentence for b in ngram_buckets(w, 100_000)}
    expected = sum(bool(trained & set(ngram_buckets(w, 100_000))) for w in held_out)
    assert result.covered_tokens["fasttext"] == expected == 8  # 국민으로부터 shares "<국민"
    assert result.stems == {"국민으로부터": "국민", "권력은": "권력"}
    assert -1 <= result.other_stem_cosine <= 1 and -1 <= result.stem_cosine <= 1


def _toy_morphs_line(line):
    return [m for word in line.split() for m in _toy_morphs(word)]


def test_compare_unseen_eojeols_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="one morpheme list per line"):
        compare_unseen_eojeols(LINES, [])
    with pytest.raises(ValueError, match="one morpheme list per line"):
        compare_unseen_eojeols("국민은 법률 앞에", [[]])


def test_fasttext_training_gives_the_same_vectors_whatever_pythonhashseed():
    """gensim with one worker and a seed is deterministic; str hashing must not leak in."""
    script = (
        "from course_utils.subword_vectors import SubwordConfig, compare_unseen_eojeols\n"
        "import sys; sys.path.insert(0, 'tests')\n"
        "from test_subword_vectors import LINES, _toy_morphs_line\n"
        "r = compare_unseen_eojeols(LINES, [_toy_morphs_line(l) for l in LINES],"
        " SubwordConfig(vector_size=8, epochs=2, bucket=2000))\n"
        "print(repr(float(r.fasttext.wv['국민에서는'].sum())), repr(r.stem_cosine))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1, outputs


# --- GloVe ---------------------------------------------------------------------------


def test_glove_weight_rises_as_a_power_and_stops_at_one():
    counts = np.array([0.0, 1.0, 50.0, 99.0, 100.0, 150.0])
    expected = np.array([0.0, 0.01**0.75, 0.5**0.75, 0.99**0.75, 1.0, 1.0])
    np.testing.assert_allclose(glove_weight(counts), expected, rtol=1e-12)
    np.testing.assert_allclose(glove_weight(counts, alpha=1.0)[:4], counts[:4] / 100)
    assert glove_weight(5.0, x_max=10).shape == ()


def test_glove_weight_rejects_bad_input():
    with pytest.raises(ValueError, match="counts must be finite and >= 0"):
        glove_weight([1.0, -1.0])
    with pytest.raises(ValueError, match="x_max and alpha must be > 0"):
        glove_weight([1.0], x_max=0)


def _glove_problem(seed=0, V=6, D=3):
    rng = np.random.default_rng(seed)
    X = rng.poisson(20, size=(V, V)).astype(float) * (rng.random((V, V)) < 0.6)
    X[0, 1], X[2, 2] = 250.0, 100.0  # above and at x_max: weight 1
    return (*(rng.normal(size=s) for s in [(V, D), (V, D), (V,), (V,)]), X)


def test_glove_loss_is_the_papers_sum_over_nonzero_counts():
    W, Wc, b, bc, X = _glove_problem()
    expected = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] > 0:
                f = min((X[i, j] / 100) ** 0.75, 1.0)
                expected += f * (W[i] @ Wc[j] + b[i] + bc[j] - np.log(X[i, j])) ** 2
    loss = glove_loss_and_grads(W, Wc, b, bc, X)[0]
    assert np.isfinite(loss) and abs(loss - expected) <= 1e-12 * expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_glove_gradients_match_torch_autograd(seed):
    import torch

    W, Wc, b, bc, X = _glove_problem(seed)
    params = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (W, Wc, b, bc)]
    tW, tWc, tb, tbc = params
    x = torch.tensor(X, dtype=torch.float64)
    mask = x > 0
    weight = torch.where(x < 100, (x / 100) ** 0.75, torch.ones_like(x))
    residual = tW @ tWc.T + tb[:, None] + tbc[None, :] - torch.log(torch.where(mask, x, 1.0))
    loss = (weight * residual**2)[mask].sum()
    loss.backward()
    ours = glove_loss_and_grads(W, Wc, b, bc, X)
    assert abs(ours[0] - loss.item()) <= 1e-10 * loss.item()
    for got, param in zip(ours[1:], params, strict=True):
        np.testing.assert_allclose(got, param.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_glove_loss_rejects_mismatched_shapes():
    W, Wc, b, bc, X = _glove_problem()
    with pytest.raises(ValueError, match=r"W and W_context must both be \(V, D\)"):
        glove_loss_and_grads(W, Wc[:, :2], b, bc, X)
    with pytest.raises(ValueError, match=r"b and b_context must be \(V,\), X \(V, V\)"):
        glove_loss_and_grads(W, Wc, b, bc, X[:, :3])
    with pytest.raises(ValueError, match="counts must be finite and >= 0"):
        glove_loss_and_grads(W, Wc, b, bc, -X)


def test_pair_weight_shares_sum_the_three_weightings():
    X = np.array([[0, 1, 1], [1, 0, 300], [1, 300, 8]], dtype=float)
    shares = pair_weight_shares(X, top_fraction=0.3)  # the two 300s are the top pairs
    assert pair_weight_shares(scipy.sparse.csr_matrix(X), top_fraction=0.3) == shares
    nonzero = np.array([1, 1, 1, 300, 1, 300, 8], dtype=float)
    glove = glove_weight(nonzero)
    assert shares.pairs == 7
    assert shares.once["uniform"] == pytest.approx(4 / 7)
    assert shares.once["count"] == pytest.approx(4 / nonzero.sum())
    assert shares.once["glove"] == pytest.approx(4 * glove[0] / glove.sum())
    assert shares.top["glove"] == pytest.approx(2 / glove.sum())
    assert shares.top["count"] == pytest.approx(600 / nonzero.sum())
    with pytest.raises(ValueError, match=r"top_fraction must be in \(0, 1\)"):
        pair_weight_shares(X, top_fraction=1.0)
    with pytest.raises(ValueError, match="no nonzero count"):
        pair_weight_shares(np.zeros((2, 2)))


# --- skip-gram against CBOW ------------------------------------------------------------
