import numpy as np
import pytest
import scipy.sparse
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import cosine as scipy_cosine_distance

from course_utils.word_vectors import (
    cosine_similarity,
    embedding_lookup,
    matrix_bytes,
    most_similar,
    one_hot,
    one_hot_sparse,
)


def test_one_hot_has_a_single_one_per_row():
    matrix = one_hot([2, 0, 2], vocab_size=4)
    assert matrix.shape == (3, 4) and matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix.sum(axis=1), 1)
    np.testing.assert_array_equal(matrix.argmax(axis=1), [2, 0, 2])


def test_sparse_one_hot_equals_dense_and_torch():
    ids = [3, 1, 4, 1, 5]
    dense = one_hot(ids, 9)
    np.testing.assert_array_equal(one_hot_sparse(ids, 9).toarray(), dense)
    reference = torch.nn.functional.one_hot(torch.tensor(ids), num_classes=9).numpy()
    np.testing.assert_array_equal(dense, reference)


def test_different_one_hot_words_are_orthogonal():
    hotel, motel = one_hot([3, 6], vocab_size=9)
    assert cosine_similarity(hotel, motel) == 0.0
    assert cosine_similarity(hotel, hotel) == pytest.approx(1.0)


vectors = st.lists(st.floats(-10, 10, allow_nan=False), min_size=3, max_size=3)


@given(vectors, vectors)
def test_cosine_matches_scipy(a, b):
    a, b = np.array(a), np.array(b)
    if np.linalg.norm(a) < 1e-6 or np.linalg.norm(b) < 1e-6:
        return
    assert cosine_similarity(a, b) == pytest.approx(1 - scipy_cosine_distance(a, b), abs=1e-9)


def test_cosine_matrix_shape_and_values():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 5)), rng.normal(size=(3, 5))
    matrix = cosine_similarity(a, b)
    assert matrix.shape == (4, 3)
    assert matrix[1, 2] == pytest.approx(cosine_similarity(a[1], b[2]))


def test_embedding_lookup_equals_one_hot_times_matrix_and_torch_embedding():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(10, 4)).astype(np.float32)
    ids = [7, 0, 7, 3]
    np.testing.assert_allclose(
        embedding_lookup(ids, weight), one_hot(ids, 10) @ weight, rtol=0, atol=1e-6
    )
    embedding = torch.nn.Embedding(10, 4)
    with torch.no_grad():
        embedding.weight.copy_(torch.from_numpy(weight))
    np.testing.assert_array_equal(
        embedding_lookup(ids, weight), embedding(torch.tensor(ids)).detach().numpy()
    )


def test_most_similar_orders_by_cosine_and_excludes():
    table = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.0]])
    assert [i for i, _ in most_similar(table[0], table, k=3)] == [0, 1, 2]
    assert [i for i, _ in most_similar(table[0], table, k=2, exclude=[0])] == [1, 2]


def test_matrix_bytes_sparse_is_far_smaller_than_dense():
    ids = np.arange(1000) % 500
    dense, sparse = one_hot(ids, 500), one_hot_sparse(ids, 500)
    assert matrix_bytes(dense) == 1000 * 500 * 4
    assert matrix_bytes(sparse) == sparse.data.nbytes + sparse.indices.nbytes + sparse.indptr.nbytes
    assert matrix_bytes(sparse) < matrix_bytes(dense) / 50


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match=r"ids must be in \[0, 4\)"):
        one_hot([4], 4)
    with pytest.raises(ValueError, match=r"1-D \(T,\)"):
        one_hot([[1]], 4)
    with pytest.raises(TypeError, match="integers"):
        one_hot([1.5], 4)
    with pytest.raises(ValueError, match="vocab_size"):
        one_hot([0], 0)
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarity(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="with the same D"):
        cosine_similarity(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"\(V, D\)"):
        embedding_lookup([0], np.ones(3))
    with pytest.raises(ValueError, match="k must be"):
        most_similar(np.ones(2), np.ones((3, 2)), k=0)
    with pytest.raises(TypeError, match="CSR or CSC"):
        matrix_bytes(scipy.sparse.coo_matrix(np.eye(2)))
    with pytest.raises(TypeError, match="NumPy array"):
        matrix_bytes([1, 2])


def test_pca_matches_the_covariance_eigendecomposition():
    from course_utils.word_vectors import pca

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 6)) @ rng.normal(size=(6, 6))
    coords, ratio = pca(x, k=2)
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(x, rowvar=False))
    top = eigenvectors[:, ::-1][:, :2]  # (D, 2), largest eigenvalues first
    for j in range(2):
        reference = (x - x.mean(axis=0)) @ top[:, j]
        assert np.allclose(coords[:, j], reference) or np.allclose(coords[:, j], -reference)
    np.testing.assert_allclose(ratio, eigenvalues[::-1][:2] / eigenvalues.sum())
    with pytest.raises(ValueError, match="k must be"):
        pca(x, k=7)
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        pca(np.ones(3))
