"""3장 단어 표현: vectors made by counting — TF-IDF, co-occurrence, PPMI and truncated SVD.

Before any training, a corpus can be turned into vectors by counting:

- a document becomes the TF-IDF weights of its terms (the formula of
  scikit-learn's ``TfidfVectorizer`` with its defaults);
- a word becomes its row of the word–context co-occurrence matrix (a
  symmetric window), reweighted by positive pointwise mutual information
  (PPMI), and squeezed into a few dense dimensions by truncated SVD (LSA).

Levy & Goldberg (2014) showed that skip-gram with negative sampling (4장)
implicitly factorises the PMI matrix shifted by ``log k``; :func:`ppmi` has the
shift ``k`` and the context-distribution smoothing ``alpha`` of Levy, Goldberg
& Dagan (2015) as options. :func:`count_word_vectors` runs the chapter's
experiment on 4장's corpus and scores the vectors with gensim's evaluation.
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from threadpoolctl import threadpool_limits

from course_utils.checks import check_int

__all__ = [
    "LODGING_AND_LAW",
    "CountConfig",
    "CountVectors",
    "PairScores",
    "constitution_chapters",
    "cooccurrence_matrix",
    "count_word_vectors",
    "encode_corpus",
    "keyed_pair_scores",
    "ppmi",
    "svd_word_vectors",
    "tfidf",
    "top_terms",
    "truncated_svd",
    "word_pair_scores",
]

# A toy corpus for the chapter: short sentences, already split into morphemes.
LODGING_AND_LAW = (
    "호텔 에 방 을 예약 했다",
    "호텔 숙박 요금 이 비싸다",
    "호텔 은 방 이 넓다",
    "모텔 에 방 을 잡았다",
    "모텔 숙박 요금 은 싸다",
    "어젯밤 모텔 에서 묵었다",
    "여관 에서 하룻밤 묵었다",
    "여관 숙박 요금 은 싸다",
    "여관 방 이 좁다",
    "헌법 은 국민 의 권리 를 보장 한다",
    "국민 은 헌법 을 지킬 의무 가 있다",
    "법률 은 국민 의 의무 를 정한다",
    "헌법 은 국민 의 자유 를 보장 한다",
    "법률 은 헌법 에 따라 만든다",
)


def _check_documents(documents: Sequence[Sequence[str]], name: str) -> list[list[str]]:
    if isinstance(documents, str) or not isinstance(documents, Sequence):
        raise TypeError(
            f"{name} must be a list of token lists (list[list[str]]), got {documents!r:.60}"
        )
    checked = []
    for i, tokens in enumerate(documents):
        if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
            raise TypeError(f"{name}[{i}] must be a list of str tokens, got {tokens!r:.60}")
        checked.append(list(tokens))
    if not checked:
        raise ValueError(f"{name} is empty: give at least one document")
    return checked


# -- documents: TF-IDF ---------------------------------------------------------


def tfidf(documents: Sequence[Sequence[str]]) -> tuple[scipy.sparse.csr_matrix, list[str]]:
    """TF-IDF of tokenized documents, as scikit-learn's ``TfidfVectorizer`` defaults.

    ``tf`` is the raw count of term ``t`` in document ``d``,
    ``idf(t) = ln((1 + N) / (1 + df(t))) + 1`` with ``N`` documents of which
    ``df(t)`` contain ``t``, and each row ``tf · idf`` is scaled to unit L2 norm.
    Returns the ``(N, V)`` matrix and its ``V`` terms in sorted order (the
    column order of scikit-learn).
    """
    docs = _check_documents(documents, "documents")
    vocabulary = sorted({t for doc in docs for t in doc})
    if not vocabulary:
        raise ValueError("the documents hold no token: TF-IDF needs at least one term")
    column = {t: j for j, t in enumerate(vocabulary)}
    rows = np.repeat(np.arange(len(docs)), [len(doc) for doc in docs])
    cols = np.array([column[t] for doc in docs for t in doc], dtype=np.int64)
    tf = scipy.sparse.csr_matrix(
        (np.ones(cols.size), (rows, cols)), shape=(len(docs), len(vocabulary))
    )  # (N, V), repeats summed into counts
    df = np.bincount(tf.indices, minlength=len(vocabulary))  # (V,) documents holding each term
    idf = np.log((1 + len(docs)) / (1 + df)) + 1  # (V,)
    weights = tf.multiply(idf[None, :]).tocsr()  # (N, V)
    norms = np.sqrt(np.asarray(weights.multiply(weights).sum(axis=1))).ravel()  # (N,)
    norms[norms == 0] = 1.0  # an empty document stays a zero row
    return scipy.sparse.diags(1 / norms) @ weights, vocabulary


def top_terms(
    matrix: np.ndarray | scipy.sparse.spmatrix, terms: Sequence[str], k: int = 5
) -> list[list[tuple[str, float]]]:
    """For each row of ``(N, V)`` weights, its ``k`` largest ``(term, weight)``, largest first."""
    if scipy.sparse.issparse(matrix):
        dense = scipy.sparse.csr_matrix(matrix).toarray()  # (N, V)
    else:
        dense = np.asarray(matrix)
    if dense.ndim != 2 or dense.shape[1] != len(terms):
        raise ValueError(
            f"matrix must be (N, V) with V = len(terms) = {len(terms)}, got {dense.shape}"
        )
    check_int(k, "k")
    order = np.argsort(-dense, axis=1, kind="stable")[:, :k]  # (N, k)
    return [[(terms[j], float(row[j])) for j in top] for row, top in zip(dense, order, strict=True)]


def constitution_chapters(text: str) -> dict[str, str]:
    """The Korean Constitution cut at its chapter headings (``제1장 총강`` …).

    Returns ``{heading: text}`` for the ten chapters; the preamble before the
    first heading and the supplementary provisions (부칙) are left out.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    body = text.split("부칙")[0]
    parts = re.split(r"^\s*(제\d+장 .+?)\s*$", body, flags=re.MULTILINE)
    if len(parts) < 3:
        raise ValueError("no chapter heading like '제1장 총강' found in the text")
    return dict(zip(parts[1::2], parts[2::2], strict=True))


# -- words: co-occurrence, PPMI, truncated SVD ---------------------------------


def encode_corpus(
    sentences: Sequence[Sequence[str]], min_count: int = 1
) -> tuple[list[str], list[np.ndarray]]:
    """Vocabulary (most frequent first) and each sentence as ids, rare words removed.

    Words seen fewer than ``min_count`` times are dropped before any window is
    laid, as Word2Vec does (4장), so the window reaches over them. Ties keep
    the order of first appearance.
    """
    sentences = _check_documents(sentences, "sentences")
    check_int(min_count, "min_count")
    counts = Counter(t for sentence in sentences for t in sentence)
    vocabulary = [w for w, c in counts.most_common() if c >= min_count]
    if not vocabulary:
        raise ValueError(f"no word occurs at least min_count={min_count} times")
    index = {w: i for i, w in enumerate(vocabulary)}
    ids = [np.array([index[t] for t in s if t in index], dtype=np.int64) for s in sentences]
    return vocabulary, ids


def cooccurrence_matrix(
    sentences: Sequence[Sequence[int] | np.ndarray], vocab_size: int, window: int
) -> scipy.sparse.csr_matrix:
    """Word–context counts ``(V, V)`` with a symmetric window of ``window`` words each side.

    ``C[w, c]`` counts how often ``c`` stands within ``window`` positions of
    ``w`` in the same sentence. Each nearby pair is counted in both
    directions, so ``C`` is symmetric.
    """
    check_int(vocab_size, "vocab_size")
    check_int(window, "window")
    if isinstance(sentences, (str, np.ndarray)) or not isinstance(sentences, Sequence):
        raise TypeError("sentences must be a list of id sequences, one per sentence")
    arrays = [np.asarray(s).reshape(-1) for s in sentences]
    for i, ids in enumerate(arrays):
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"sentences[{i}] must hold int ids, got dtype {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError(f"sentences[{i}] has ids outside [0, {vocab_size})")
    ids = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)  # (T,)
    sentence = np.repeat(np.arange(len(arrays)), [a.size for a in arrays])  # (T,)
    words, contexts = [], []
    for d in range(1, window + 1):
        same = sentence[:-d] == sentence[d:]  # (T - d,) pairs d apart in one sentence
        left, right = ids[:-d][same], ids[d:][same]
        words += [left, right]
        contexts += [right, left]  # both directions: the matrix is symmetric
    rows = np.concatenate(words) if words else np.zeros(0, np.int64)
    cols = np.concatenate(contexts) if contexts else np.zeros(0, np.int64)
    return scipy.sparse.csr_matrix(
        (np.ones(rows.size), (rows, cols)), shape=(vocab_size, vocab_size)
    )  # (V, V), repeated pairs summed


def _as_counts(counts: Any) -> scipy.sparse.coo_matrix:
    if scipy.sparse.issparse(counts):
        matrix = scipy.sparse.coo_matrix(counts, dtype=np.float64)
    else:
        array = np.asarray(counts)
        if array.dtype == object or not (
            np.issubdtype(array.dtype, np.number) or array.dtype == bool
        ):
            raise TypeError(f"counts must be a numeric matrix, got dtype {array.dtype}")
        if array.ndim != 2:
            raise ValueError(f"counts must be 2-D (words, contexts), got shape {array.shape}")
        matrix = scipy.sparse.coo_matrix(array.astype(np.float64))
    matrix.sum_duplicates()
    if matrix.ndim != 2:
        raise ValueError(f"counts must be 2-D (words, contexts), got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix.data)) or np.any(matrix.data < 0):
        raise ValueError("counts must be finite and non-negative")
    if matrix.data.sum() == 0:
        raise ValueError("counts are all zero: PMI needs at least one co-occurrence")
    return matrix


def ppmi(counts: Any, alpha: float = 1.0, k: float = 1.0) -> scipy.sparse.csr_matrix:
    """Positive PMI of a word–context count matrix ``(V, C)``: ``max(PMI − log k, 0)``.

    ``PMI(w, c) = log P(w, c) / (P(w) · P_α(c))`` with ``P(w, c) = #(w, c) / D``,
    ``P(w) = #(w) / D`` and ``P_α(c) = #(c)^α / Σ #(c')^α`` (``α = 1``: the
    plain context distribution; Levy et al. 2015 smooth it with ``α = 0.75``).
    ``k > 1`` gives the shifted PPMI of Levy & Goldberg (2014). Cells with no
    co-occurrence have PMI = −∞ and stay 0, so the result is as sparse as ``counts``.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha <= 1:
        raise ValueError(f"alpha must be a number in (0, 1], got {alpha!r}")
    if isinstance(k, bool) or not isinstance(k, numbers.Real) or not k >= 1:
        raise ValueError(f"k must be a number >= 1 (the shift is log k), got {k!r}")
    matrix = _as_counts(counts)
    matrix.eliminate_zeros()
    total = matrix.data.sum()  # D
    word_counts = np.bincount(matrix.row, matrix.data, minlength=matrix.shape[0])  # (V,) #(w)
    context_counts = np.bincount(matrix.col, matrix.data, minlength=matrix.shape[1])  # (C,) #(c)
    smoothed = context_counts**alpha
    log_p_context = np.log(smoothed[matrix.col] / smoothed.sum())  # (nnz,) log P_α(c)
    pmi = (
        np.log(matrix.data / total)  # log P(w, c)
        - np.log(word_counts[matrix.row] / total)  # log P(w)
        - log_p_context
    )  # (nnz,)
    shifted = pmi - np.log(k)
    keep = shifted > 0
    return scipy.sparse.csr_matrix(
        (shifted[keep], (matrix.row[keep], matrix.col[keep])), shape=matrix.shape
    )


def truncated_svd(
    matrix: Any, rank: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``rank`` largest singular triplets of a ``(m, n)`` matrix.

    Returns ``U (m, r)``, ``S (r,)`` and ``Vt (r, n)`` with ``r = rank``.

    Computed by ``scipy.sparse.linalg.svds`` (ARPACK), so a sparse matrix is
    never made dense. Singular values come largest first, and each pair of
    singular vectors is signed so that the largest-magnitude entry of the
    ``U`` column is positive, which makes the result repeat from run to run.
    ``U[:, :r] · diag(S) · Vt`` is the best rank-``r`` approximation (Eckart–Young).
    """
    if scipy.sparse.issparse(matrix):
        operand = scipy.sparse.csr_matrix(matrix, dtype=np.float64)
    else:
        operand = np.asarray(matrix, dtype=np.float64)
    if operand.ndim != 2:
        raise ValueError(f"matrix must be 2-D (m, n), got shape {operand.shape}")
    limit = min(operand.shape) - 1
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= limit:
        raise ValueError(f"rank must be an int in [1, min(m, n) - 1] = [1, {limit}], got {rank!r}")
    if scipy.sparse.issparse(operand):
        finite = np.all(np.isfinite(operand.data))
    else:
        finite = np.all(np.isfinite(operand))
    if not finite:
        raise ValueError("matrix must be finite (no NaN or inf)")
    # ARPACK makes many small BLAS calls: threads gain nothing and stall on shared cores.
    with threadpool_limits(limits=1, user_api="blas"):
        u, s, vt = scipy.sparse.linalg.svds(operand, k=int(rank), random_state=seed)
    order = np.argsort(-s, kind="stable")  # svds returns them smallest first
    u, s, vt = u[:, order], s[order], vt[order]  # (m, r), (r,), (r, n)
    signs = np.sign(u[np.abs(u).argmax(axis=0), np.arange(u.shape[1])])  # (r,)
    signs[signs == 0] = 1.0
    return u * signs, s, vt * signs[:, None]


def svd_word_vectors(matrix: Any, dim: int, power: float = 0.5, seed: int = 0) -> np.ndarray:
    """Dense word vectors ``W = U_d · Σ_d^power`` ``(V, d)`` from a ``(V, C)`` matrix.

    ``power = 0.5`` splits ``Σ`` evenly between words and contexts,
    ``W = U√Σ`` and ``C = V√Σ``, so that ``W Cᵀ`` is the rank-``d``
    approximation of the matrix: the same form as SGNS's two tables.
    """
    if isinstance(power, bool) or not isinstance(power, numbers.Real) or not 0 <= power <= 1:
        raise ValueError(f"power must be a number in [0, 1], got {power!r}")
    u, s, _ = truncated_svd(matrix, dim, seed)  # (V, d), (d,)
    return u * s**power  # (V, d)


# -- scoring and the chapter's experiment --------------------------------------


@dataclass(frozen=True)
class PairScores:
    """Word vectors scored by gensim on the two word-pair sets it ships."""

    ws353_rho: float  # Spearman ρ with WordSim353's human relatedness scores
    ws353_pairs: int  # pairs whose two words are both in the vocabulary
    simlex_rho: float  # Spearman ρ with SimLex-999's human similarity scores
    simlex_pairs: int


def keyed_pair_scores(keyed: Any) -> PairScores:
    """Score gensim ``KeyedVectors`` on WordSim353 and SimLex-999 with ``evaluate_word_pairs``.

    Pairs with a word outside the vocabulary are skipped and not counted.
    4장's ``course_utils.word2vec.gensim_scores`` adds the analogy test to this.
    """
    from gensim.test.utils import datapath

    scores = {}
    for name in ("wordsim353.tsv", "simlex999.txt"):
        path = datapath(name)
        _, spearman, oov_percent = keyed.evaluate_word_pairs(path)
        with open(path, encoding="utf-8") as lines:
            total = sum(1 for line in lines if line.strip() and not line.startswith("#"))
        scores[name] = (float(spearman.statistic), round(total * (1 - oov_percent / 100)))
    return PairScores(*scores["wordsim353.tsv"], *scores["simlex999.txt"])


def word_pair_scores(words: Sequence[str], vectors: np.ndarray) -> PairScores:
    """Score ``vectors`` ``(V, d)`` for ``words`` with :func:`keyed_pair_scores`."""
    from gensim.models import KeyedVectors

    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise ValueError(
            f"vectors must be (V, d) with V = len(words) = {len(words)}, got {vectors.shape}"
        )
    keyed = KeyedVectors(vectors.shape[1])
    keyed.add_vectors(list(words), vectors)
    return keyed_pair_scores(keyed)


@dataclass(frozen=True)
class CountConfig:
    """Settings of the count-based word vectors (defaults: 3장, matched to 4장's Word2Vec)."""

    min_count: int = 5  # words seen fewer times are dropped, as in 4장
    window: int = 5  # symmetric window, words each side, as 4장's largest window
    dim: int = 100  # d, the dense dimension, as 4장's vector_size
    alpha: float = 1.0  # context-distribution smoothing exponent (1: none)
    k: float = 1.0  # shift: max(PMI − log k, 0) (1: plain PPMI)
    power: float = 0.5  # eigenvalue weighting: W = U_d Σ_d^power
    seed: int = 0


@dataclass
class CountVectors:
    """The matrices and vectors of one run, and their scores."""

    index_to_key: list[str]
    counts: scipy.sparse.csr_matrix  # (V, V) co-occurrence counts
    ppmi: scipy.sparse.csr_matrix  # (V, V)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # weighting → (V, d)
    scores: dict[str, PairScores] = field(default_factory=dict)


def count_word_vectors(
    sentences: Sequence[Sequence[str]], config: CountConfig | None = None
) -> CountVectors:
    """3장's experiment: SVD of raw counts and of PPMI, both scored by gensim.

    The same truncated SVD is applied to the co-occurrence counts and to
    their PPMI, so the two rows of the chapter's table differ only in the weighting.
    """
    config = config if config is not None else CountConfig()
    vocabulary, ids = encode_corpus(sentences, config.min_count)
    counts = cooccurrence_matrix(ids, len(vocabulary), config.window)  # (V, V)
    weighted = ppmi(counts, alpha=config.alpha, k=config.k)  # (V, V)
    result = CountVectors(vocabulary, counts, weighted)
    for name, matrix in (("counts", counts), ("ppmi", weighted)):
        vectors = svd_word_vectors(matrix, config.dim, config.power, config.seed)  # (V, d)
        result.vectors[name] = vectors
        result.scores[name] = word_pair_scores(vocabulary, vectors)
    return result
