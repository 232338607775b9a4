"""course_utils.count_vectors (3장): TF-IDF, co-occurrence, PPMI and truncated SVD against references.

TF-IDF is compared with scikit-learn's TfidfVectorizer, co-occurrence counts
with NLTK's windowed bigram counts, PMI with NLTK's association measure and the
worked example of Jurafsky & Martin, truncated SVD with numpy.linalg.svd; PPMI
is also checked against its definition written as plain loops.
"""

import math

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.collocations import BigramAssocMeasures, BigramCollocationFinder
from sklearn.feature_extraction.text import TfidfVectorizer

from course_utils.count_vectors import (
    LODGING_AND_LAW,
    constitution_chapters,
    cooccurrence_matrix,
    encode_corpus,
    ppmi,
    svd_word_vectors,
    tfidf,
    top_terms,
    truncated_svd,
    word_pair_scores,
)
from course_utils.word2vec import Word2Vec, Word2VecConfig

# -- TF-IDF ---------------------------------------------------------------------


def _sklearn_tfidf(documents, **options):
    vectorizer = TfidfVectorizer(analyzer=lambda tokens: tokens, **options)
    matrix = vectorizer.fit_transform(documents)
    return matrix.toarray(), list(vectorizer.get_feature_names_out())


def test_tfidf_matches_sklearn_defaults_on_korean_documents():
    documents = [sentence.split() for sentence in LODGING_AND_LAW]
    matrix, terms = tfidf(documents)
    expected, expected_terms = _sklearn_tfidf(documents)
    assert terms == expected_terms
    assert matrix.shape == (len(documents), len(terms))
    np.testing.assert_allclose(matrix.toarray(), expected, rtol=0, atol=1e-12)


words = st.sampled_from(["국민", "헌법", "법률", "a", "b", "the", "권리"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(words, min_size=1, max_size=12), min_size=1, max_size=6))
def test_tfidf_matches_sklearn_on_random_documents(documents):
    matrix, terms = tfidf(documents)
    expected, expected_terms = _sklearn_tfidf(documents)
    assert terms == expected_terms
    np.testing.assert_allclose(matrix.toarray(), expected, rtol=0, atol=1e-12)


def test_tfidf_formula_by_hand_and_an_empty_document_stays_zero():
    # N = 3 documents: "a" in two (idf ln(4/3) + 1), "b" in one (idf ln(4/2) + 1), one empty.
    matrix, terms = tfidf([["a", "b", "b"], ["a"], []])
    assert terms == ["a", "b"]
    idf = np.array([math.log(4 / 3) + 1, math.log(4 / 2) + 1])
    row = np.array([1.0, 2.0]) * idf
    np.testing.assert_allclose(matrix.toarray()[0], row / np.linalg.norm(row), atol=1e-15)
    np.testing.assert_allclose(matrix.toarray()[1:], [[1.0, 0.0], [0.0, 0.0]], atol=1e-15)
    expected, _ = _sklearn_tfidf([["a", "b", "b"], ["a"], []])
    np.testing.assert_allclose(matrix.toarray(), expected, atol=1e-15)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ("국민 헌법", TypeError, "list of token lists"),
        ([["국민"], "헌법"], TypeError, r"documents\[1\]"),
        ([["국민", 3]], TypeError, r"documents\[0\] must be a list of str"),
        ([], ValueError, "empty"),
        ([[], []], ValueError, "no token"),
    ],
)
def test_tfidf_rejects_bad_documents(bad, error, message):
    with pytest.raises(error, match=message):
        tfidf(bad)


def test_top_terms_are_largest_first_and_check_their_input():
    weights = np.array([[0.1, 0.7, 0.2], [0.5, 0.0, 0.5]])
    assert top_terms(weights, ["가", "나", "다"], k=2) == [
        [("나", 0.7), ("다", 0.2)],
        [("가", 0.5), ("다", 0.5)],  # ties keep the column order
    ]
    assert top_terms(scipy.sparse.csr_matrix(weights), ["가", "나", "다"], k=1)[0] == [("나", 0.7)]
    with pytest.raises(ValueError, match=r"V = len\(terms\) = 2"):
        top_terms(weights, ["가", "나"])
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        top_terms(weights, ["가", "나", "다"], k=0)


def test_constitution_chapters_are_the_ten_chapters_without_preamble_or_addenda():
    from course_utils.datasets import load_kolaw

    chapters = constitution_chapters(load_kolaw())
    assert list(chapters)[:3] == ["제1장 총강", "제2장 국민의 권리와 의무", "제3장 국회"]
    assert len(chapters) == 10 and list(chapters)[-1] == "제10장 헌법개정"
    assert "유구한 역사와 전통" not in "".join(chapters.values())  # the preamble
    assert "1988년 2월 25일부터 시행한다" not in chapters["제10장 헌법개정"]  # 부칙
    with pytest.raises(ValueError, match="no chapter heading"):
        constitution_chapters("장이 없는 글")
    with pytest.raises(TypeError, match="text must be a str"):
        constitution_chapters(["제1장 총강"])


# -- vocabulary and co-occurrence -------------------------------------------------


def test_encode_corpus_orders_like_word2vec_and_drops_rare_words():
    sentences = [s.split() for s in LODGING_AND_LAW]
    vocabulary, ids = encode_corpus(sentences, min_count=2)
    model = Word2Vec(sentences, Word2VecConfig(min_count=2))
    assert vocabulary == model.index_to_key  # 4장's vocabulary, same order
    assert [len(s) for s in ids] == [sum(t in vocabulary for t in s) for s in sentences]
    assert [vocabulary[i] for i in ids[0]] == [t for t in sentences[0] if t in vocabulary]


@pytest.mark.parametrize(
    ("sentences", "min_count", "error", "message"),
    [
        ([["a"]], 0, ValueError, "min_count must be an int >= 1"),
        ([["a"]], 2, ValueError, "no word occurs at least min_count=2"),
        ("a b", 1, TypeError, "list of token lists"),
    ],
)
def test_encode_corpus_rejects_bad_input(sentences, min_count, error, message):
    with pytest.raises(error, match=message):
        encode_corpus(sentences, min_count)


def _brute_force_counts(sentences, vocab_size, window):
    counts = np.zeros((vocab_size, vocab_size))
    for sentence in sentences:
        for i, word in enumerate(sentence):
            for j, context in enumerate(sentence):
                if i != j and abs(i - j) <= window:
                    counts[word, context] += 1
    return counts


corpora = st.lists(st.lists(st.integers(0, 5), max_size=9), min_size=1, max_size=5)


@settings(max_examples=80, deadline=None)
@given(corpora, st.integers(1, 4))
def test_cooccurrence_equals_the_loop_definition_and_is_symmetric(sentences, window):
    counts = cooccurrence_matrix(sentences, 6, window)
    assert counts.shape == (6, 6)
    np.testing.assert_array_equal(counts.toarray(), _brute_force_counts(sentences, 6, window))
    assert (counts != counts.T).nnz == 0


def test_cooccurrence_matches_nltk_windowed_bigrams_and_stays_inside_sentences():
    sentences = [s.split() for s in LODGING_AND_LAW]
    vocabulary, ids = encode_corpus(sentences)
    window = 2
    counts = cooccurrence_matrix(ids, len(vocabulary), window).toarray()
    expected = np.zeros_like(counts)
    for sentence in sentences:  # NLTK counts w2 up to window_size - 1 words after w1
        finder = BigramCollocationFinder.from_words(sentence, window_size=window + 1)
        for (first, second), n in finder.ngram_fd.items():
            expected[vocabulary.index(first), vocabulary.index(second)] += n
            expected[vocabulary.index(second), vocabulary.index(first)] += n
    np.testing.assert_array_equal(counts, expected)
    # "했다" ends sentence 1 and "호텔" starts sentence 2: no pair across the boundary.
    assert counts[vocabulary.index("했다"), vocabulary.index("숙박")] == 0


@pytest.mark.parametrize(
    ("sentences", "vocab_size", "window", "error", "message"),
    [
        ([[0, 1]], 2, 0, ValueError, "window must be an int >= 1"),
        ([[0, 1]], 0, 2, ValueError, "vocab_size must be an int >= 1"),
        ([[0, 2]], 2, 1, ValueError, r"sentences\[0\] has ids outside \[0, 2\)"),
        ([[0, -1]], 2, 1, ValueError, "outside"),
        ([[0.0, 1.0]], 2, 1, TypeError, "int ids"),
        ("01", 2, 1, TypeError, "list of id sequences"),
    ],
)
def test_cooccurrence_rejects_bad_input(sentences, vocab_size, window, error, message):
    with pytest.raises(error, match=message):
        cooccurrence_matrix(sentences, vocab_size, window)


# -- PPMI -----------------------------------------------------------------------


def _brute_force_ppmi(counts, alpha=1.0, k=1.0):
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    rows, cols = counts.shape
    smoothed = [sum(counts[:, c]) ** alpha for c in range(cols)]
    out = np.zeros_like(counts)
    for w in range(rows):
        for c in range(cols):
            if counts[w, c] == 0:
                continue  # PMI is log 0 = −∞: the positive part is 0
            p_wc = counts[w, c] / total
            p_w = sum(counts[w, :]) / total
            p_c = smoothed[c] / sum(smoothed)
            out[w, c] = max(math.log(p_wc / (p_w * p_c)) - math.log(k), 0.0)
    return out


# Jurafsky & Martin, Speech and Language Processing (3rd ed. draft), ch. 6: counts of
# cherry/strawberry/digital/information with computer/data/result/pie/sugar.
SLP_COUNTS = np.array(
    [[2, 8, 9, 442, 25], [0, 0, 1, 60, 19], [1670, 1683, 85, 5, 4], [3325, 3982, 378, 5, 13]]
)


def test_ppmi_reproduces_the_textbook_example():
    # The book works PPMI in log base 2: ppmi(information, data) = .0944, ppmi(cherry, pie) = 4.38.
    weights = ppmi(SLP_COUNTS).toarray() / math.log(2)
    assert weights[3, 1] == pytest.approx(0.0944, abs=5e-5)
    assert weights[0, 3] == pytest.approx(4.38, abs=5e-3)


def test_ppmi_matches_nltk_pmi_and_the_loop_definition():
    weights = ppmi(SLP_COUNTS).toarray()
    total = SLP_COUNTS.sum()
    rows, cols = SLP_COUNTS.sum(axis=1), SLP_COUNTS.sum(axis=0)
    for w in range(4):
        for c in range(5):
            if SLP_COUNTS[w, c] == 0:
                assert weights[w, c] == 0
                continue
            pmi_bits = BigramAssocMeasures.pmi(
                int(SLP_COUNTS[w, c]), (int(rows[w]), int(cols[c])), int(total)
            )
            assert weights[w, c] == pytest.approx(max(pmi_bits, 0) * math.log(2), abs=1e-12)
    np.testing.assert_allclose(weights, _brute_force_ppmi(SLP_COUNTS), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(("alpha", "k"), [(0.75, 1.0), (1.0, 5.0), (0.75, 5.0), (0.5, 2.0)])
def test_ppmi_with_smoothing_and_shift_matches_the_loop_definition(alpha, k):
    expected = _brute_force_ppmi(SLP_COUNTS, alpha, k)
    got = ppmi(scipy.sparse.csr_matrix(SLP_COUNTS), alpha=alpha, k=k).toarray()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)


def test_shift_lowers_every_kept_cell_by_log_k_and_drops_the_weak_ones():
    plain, shifted = ppmi(SLP_COUNTS).toarray(), ppmi(SLP_COUNTS, k=5).toarray()
    kept = shifted > 0
    np.testing.assert_allclose(shifted[kept], plain[kept] - math.log(5), atol=1e-12)
    assert np.all(plain[~kept] <= math.log(5) + 1e-12)


count_matrices = st.lists(
    st.lists(st.integers(0, 6), min_size=4, max_size=4), min_size=3, max_size=5
).map(np.array)


@settings(max_examples=80, deadline=None)
@given(count_matrices, st.sampled_from([0.5, 0.75, 1.0]), st.sampled_from([1.0, 2.0, 5.0]))
def test_ppmi_is_non_negative_zero_where_counts_are_zero_and_equals_the_loops(counts, alpha, k):
    if counts.sum() == 0:
        return
    weights = ppmi(counts, alpha=alpha, k=k).toarray()
    assert weights.shape == counts.shape
    assert np.all(weights >= 0)
    assert np.all(weights[counts == 0] == 0)
    np.testing.assert_allclose(weights, _brute_force_ppmi(counts, alpha, k), rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(corpora, st.integers(1, 3), st.sampled_from([1.0, 5.0]))
def test_ppmi_of_a_symmetric_window_is_symmetric(sentences, window, k):
    counts = cooccurrence_matrix(sentences, 6, window)
    if counts.nnz == 0:
        return
    weights = ppmi(counts, k=k).toarray()
    np.testing.assert_allclose(weights, weights.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("counts", "options", "error", "message"),
    [
        (np.array([[1, -1], [0, 2]]), {}, ValueError, "finite and non-negative"),
        (np.array([[1, np.nan], [0, 2]]), {}, ValueError, "finite and non-negative"),
        (np.zeros((2, 2)), {}, ValueError, "all zero"),
        (np.array([1, 2, 3]), {}, ValueError, r"2-D \(words, contexts\)"),
        (np.array([["a", "b"]]), {}, TypeError, "numeric matrix"),
        (np.eye(2), {"alpha": 0}, ValueError, r"alpha must be a number in \(0, 1\]"),
        (np.eye(2), {"alpha": 1.5}, ValueError, "alpha"),
        (np.eye(2), {"k": 0.5}, ValueError, "k must be a number >= 1"),
        (np.eye(2), {"k": True}, ValueError, "k must be"),
    ],
)
def test_ppmi_rejects_bad_input(counts, options, error, message):
    with pytest.raises(error, match=message):
        ppmi(counts, **options)


# -- truncated SVD ---------------------------------------------------------------


@pytest.mark.parametrize(("shape", "rank"), [((8, 6), 3), ((6, 9), 2), ((12, 12), 5)])
@pytest.mark.parametrize("sparse", [False, True])
def test_truncated_svd_matches_numpy_svd(shape, rank, sparse):
    rng = np.random.default_rng(sum(shape) + rank)
    matrix = rng.poisson(1.5, size=shape).astype(float)  # distinct singular values
    u, s, vt = truncated_svd(scipy.sparse.csr_matrix(matrix) if sparse else matrix, rank)
    assert u.shape == (shape[0], rank) and s.shape == (rank,) and vt.shape == (rank, shape[1])
    u_ref, s_ref, vt_ref = np.linalg.svd(matrix)
    np.testing.assert_allclose(s, s_ref[:rank], rtol=1e-10)
    # The best rank-r approximation is unique when σ_r > σ_{r+1}.
    best = u_ref[:, :rank] * s_ref[:rank] @ vt_ref[:rank]
    np.testing.assert_allclose(u * s @ vt, best, atol=1e-10)
    # Each singular vector agrees with numpy's up to its sign.
    signs = np.sign(np.sum(u * u_ref[:, :rank], axis=0))
    np.testing.assert_allclose(u, u_ref[:, :rank] * signs, atol=1e-9)
    np.testing.assert_allclose(vt, vt_ref[:rank] * signs[:, None], atol=1e-9)
    np.testing.assert_allclose(u.T @ u, np.eye(rank), atol=1e-12)


def test_truncated_svd_signs_are_fixed_and_repeat():
    matrix = np.random.default_rng(0).normal(size=(10, 7))
    first, second = truncated_svd(matrix, 4, seed=0), truncated_svd(-matrix, 4, seed=3)
    u = first[0]
    assert np.all(u[np.abs(u).argmax(axis=0), np.arange(4)] > 0)
    np.testing.assert_allclose(second[0], u, atol=1e-10)  # −A has the same U with V flipped
    np.testing.assert_allclose(second[2], -first[2], atol=1e-10)


@pytest.mark.parametrize(
    ("matrix", "rank", "message"),
    [
        (np.ones((4, 3)), 3, r"rank must be an int in \[1, min\(m, n\) - 1\] = \[1, 2\]"),
        (np.ones((4, 3)), 0, "rank must be"),
        (np.ones(4), 1, r"2-D \(m, n\)"),
        (np.array([[1.0, np.inf, 0], [0, 1, 0], [1, 0, 1]]), 1, "finite"),
    ],
)
def test_truncated_svd_rejects_bad_input(matrix, rank, message):
    with pytest.raises(ValueError, match=message):
        truncated_svd(matrix, rank)


def test_svd_word_vectors_weight_the_singular_values():
    matrix = np.random.default_rng(1).poisson(2.0, size=(9, 9)).astype(float)
    u, s, _ = truncated_svd(matrix, 3)
    np.testing.assert_allclose(svd_word_vectors(matrix, 3, power=0.5), u * np.sqrt(s), atol=1e-12)
    np.testing.assert_allclose(svd_word_vectors(matrix, 3, power=1), u * s, atol=1e-12)
    np.testing.assert_allclose(svd_word_vectors(matrix, 3, power=0), u, atol=1e-12)
    with pytest.raises(ValueError, match=r"power must be a number in \[0, 1\]"):
        svd_word_vectors(matrix, 3, power=2)


# -- scoring --------------------------------------------------------------------


def test_word_pair_scores_are_spearman_of_cosines_over_the_pairs_in_the_vocabulary():
    from scipy.stats import spearmanr

    from course_utils.datasets import load_simlex999, load_wordsim353

    rng = np.random.default_rng(0)
    sets = {"ws353": load_wordsim353(), "simlex": load_simlex999()}
    words = sorted({w for pairs in sets.values() for a, b, _ in pairs[:30] for w in (a, b)})
    vectors = rng.normal(size=(len(words), 8))
    ours = word_pair_scores(words, vectors)
    index = {w: i for i, w in enumerate(words)}
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for name, pairs in sets.items():
        known = [(a, b, score) for a, b, score in pairs if a in index and b in index]
        cosines = [unit[index[a]] @ unit[index[b]] for a, b, _ in known]
        rho = spearmanr([score for *_, score in known], cosines).statistic
        assert getattr(ours, f"{name}_pairs") == len(known) >= 30
        assert getattr(ours, f"{name}_rho") == pytest.approx(rho, abs=1e-6)
    with pytest.raises(ValueError, match=rf"V = len\(words\) = {len(words)}"):
        word_pair_scores(words, vectors[:3])
