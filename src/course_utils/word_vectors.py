"""3장 단어 표현: from one-hot vectors to dense embeddings.

A one-hot vector has a single 1 at the word's id. Any two different words are
orthogonal, so their cosine similarity is 0 whatever they mean; and a matrix of
one-hot rows is almost all zeros. An embedding table fixes both: a lookup is
the one-hot vector times a dense matrix, with far fewer columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse

from course_utils.checks import check_int

__all__ = [
    "cosine_similarity",
    "embedding_lookup",
    "matrix_bytes",
    "most_similar",
    "one_hot",
    "one_hot_sparse",
    "pca",
]


def _check_ids(ids: Sequence[int] | np.ndarray, vocab_size: int) -> np.ndarray:
    check_int(vocab_size, "vocab_size")
    array = np.asarray(ids)
    if array.ndim != 1:
        raise ValueError(f"ids must be 1-D (T,), got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"ids must be integers, got dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        raise ValueError(
            f"ids must be in [0, {vocab_size}), got min {array.min()} max {array.max()}"
        )
    return array.astype(np.int64)


def one_hot(ids: Sequence[int] | np.ndarray, vocab_size: int) -> np.ndarray:
    """Dense one-hot rows: ``(T,)`` ids → ``(T, V)`` float32 with one 1 per row."""
    array = _check_ids(ids, vocab_size)
    matrix = np.zeros((array.size, vocab_size), dtype=np.float32)  # (T, V)
    matrix[np.arange(array.size), array] = 1.0
    return matrix


def one_hot_sparse(ids: Sequence[int] | np.ndarray, vocab_size: int) -> scipy.sparse.csr_matrix:
    """The same rows stored sparsely (CSR): only the 1s and where they are."""
    array = _check_ids(ids, vocab_size)
    data = np.ones(array.size, dtype=np.float32)
    return scipy.sparse.csr_matrix(
        (data, (np.arange(array.size), array)), shape=(array.size, vocab_size)
    )


def matrix_bytes(matrix: np.ndarray | scipy.sparse.spmatrix) -> int:
    """Bytes a dense array or a CSR/CSC matrix holds in memory (data and index arrays)."""
    if isinstance(matrix, (scipy.sparse.csr_matrix, scipy.sparse.csc_matrix)):
        return int(matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes)
    if scipy.sparse.issparse(matrix):
        raise TypeError(f"expected a CSR or CSC matrix, got {type(matrix).__name__}")
    if not isinstance(matrix, np.ndarray):
        raise TypeError(
            f"expected a NumPy array or a SciPy sparse matrix, got {type(matrix).__name__}"
        )
    return int(matrix.nbytes)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """Cosine of the angle between vectors: ``a·b / (‖a‖ ‖b‖)``.

    Two vectors ``(D,)`` give a float; ``(N, D)`` and ``(M, D)`` give ``(N, M)``.
    A zero vector has no direction and raises ``ValueError``.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim not in (1, 2) or b.ndim not in (1, 2) or a.shape[-1] != b.shape[-1]:
        got = f"{a.shape} and {b.shape}"
        raise ValueError(f"expected (D,) or (N, D) arrays with the same D, got {got}")
    a2 = np.atleast_2d(a)
    b2 = np.atleast_2d(b)
    norms_a = np.linalg.norm(a2, axis=1, keepdims=True)  # (N, 1)
    norms_b = np.linalg.norm(b2, axis=1, keepdims=True)  # (M, 1)
    if np.any(norms_a == 0) or np.any(norms_b == 0):
        raise ValueError("cosine similarity is undefined for a zero vector")
    similarity = (a2 / norms_a) @ (b2 / norms_b).T  # (N, M)
    if a.ndim == 1 and b.ndim == 1:
        return float(similarity[0, 0])
    return similarity


def most_similar(
    query: np.ndarray, vectors: np.ndarray, k: int = 5, exclude: Sequence[int] = ()
) -> list[tuple[int, float]]:
    """The ``k`` rows of ``vectors`` ``(V, D)`` with the highest cosine to ``query`` ``(D,)``."""
    check_int(k, "k")
    scores = np.asarray(cosine_similarity(query, vectors)).reshape(-1)  # (V,)
    scores[list(exclude)] = -np.inf
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), float(scores[i])) for i in order if np.isfinite(scores[i])]


def embedding_lookup(ids: Sequence[int] | np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Rows of the table ``(V, D)`` for ids ``(T,)``: ``one_hot(ids) @ weight``, no multiply."""
    weight = np.asarray(weight)
    if weight.ndim != 2:
        raise ValueError(f"weight must be (V, D), got shape {weight.shape}")
    array = _check_ids(ids, weight.shape[0])
    return weight[array]  # (T, D)


def pca(vectors: np.ndarray, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Project ``(N, D)`` vectors on their first ``k`` principal components.

    Returns ``(coordinates (N, k), explained variance ratio (k,))``. Each
    component's sign is fixed so that its largest-magnitude loading is positive,
    which makes plots repeat from run to run.
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"vectors must be (N, D) with N >= 2, got shape {x.shape}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= min(x.shape):
        raise ValueError(f"k must be an int in [1, {min(x.shape)}], got {k!r}")
    centred = x - x.mean(axis=0)  # (N, D)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)  # (D', D)
    components = components[:k]  # (k, D)
    signs = np.sign(components[np.arange(k), np.abs(components).argmax(axis=1)])
    components = components * signs[:, None]
    variance = singular**2
    return centred @ components.T, variance[:k] / variance.sum()
