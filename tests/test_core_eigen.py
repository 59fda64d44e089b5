"""Block Krylov: the stopping measures it reports are those of the pairs it returns."""

import numpy as np
import pytest
import scipy.linalg

from bigdr.core.eigen import block_krylov_eigh


def _operator(n: int, gap: float, seed: int = 0) -> np.ndarray:
    """A symmetric positive semi-definite matrix with a flat spectrum and a small gap after 10."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    values = np.concatenate([np.linspace(2.0, 1.0 + gap, 10), np.linspace(1.0, 0.01, n - 10)])
    return (Q * values) @ Q.T


def _explicit(A: np.ndarray, values: np.ndarray, vectors: np.ndarray, k: int) -> tuple[float, float]:
    """Largest relative residual and the Davis-Kahan angle estimate, computed from the pairs as returned."""
    R = A @ vectors[:, :k] - vectors[:, :k] * values[:k]
    residual = float(np.max(np.linalg.norm(R, axis=0) / np.abs(values[:k])))
    return residual, float(min(1.0, np.linalg.norm(R, 2) / (values[k - 1] - values[k])))


@pytest.mark.parametrize("criterion", ["residual", "angle"])
@pytest.mark.parametrize("width", [3, 4, 12])
def test_reported_measures_are_the_returned_pairs(criterion, width):
    A = _operator(300, gap=0.02)
    tol = 1e-9 if criterion == "residual" else 1e-7
    eig = block_krylov_eigh(lambda Z: A @ Z, 300, width, 2, 0, tol=tol, n_check=10, max_iter=200, criterion=criterion)
    k = 11  # one pair past those checked, for the gap
    residual, angle = _explicit(A, eig.values, eig.vectors, k - 1)
    # abs: once the pairs are exact, both measures are rounding (1e-13 here), which differs between CPUs'
    # BLAS kernels; still 1,000 times below the tolerances
    assert eig.residual == pytest.approx(residual, rel=1e-6, abs=1e-12)
    assert eig.angle == pytest.approx(angle, rel=1e-6, abs=1e-12)
    assert (eig.angle if criterion == "angle" else eig.residual) <= tol
    exact_values, exact_vectors = scipy.linalg.eigh(A)
    top = exact_vectors[:, ::-1][:, :10]
    sine = np.linalg.norm(eig.vectors[:, :10] - top @ (top.T @ eig.vectors[:, :10]), 2)
    assert sine <= max(eig.angle, 1e-12) * 1.01  # the estimate bounds the true angle
    np.testing.assert_allclose(eig.values[:10], exact_values[::-1][:10], rtol=1e-8)


def test_invariant_subspace_stops_with_exact_pairs():
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((50, 6)))
    A = (Q * np.array([6.0, 5, 4, 3, 2, 1])) @ Q.T  # rank 6: the space stops growing
    eig = block_krylov_eigh(lambda Z: A @ Z, 50, 4, 1, 0, tol=1e-12, n_check=4, max_iter=30)
    np.testing.assert_allclose(eig.values[:6], [6, 5, 4, 3, 2, 1], atol=1e-10)
    assert eig.residual <= 1e-10


def _knn_laplacian(X: np.ndarray, k: int):
    """The symmetric normalised Laplacian of a symmetrised kNN graph with Gaussian weights."""
    import scipy.sparse as sp
    from sklearn.neighbors import kneighbors_graph

    W = kneighbors_graph(X, k, mode="distance")
    W.data = np.exp(-((W.data / np.median(W.data)) ** 2))
    W = W.maximum(W.T).tocsr()
    d = np.asarray(W.sum(axis=1)).ravel()
    S = sp.diags(1 / np.sqrt(d)) @ W @ sp.diags(1 / np.sqrt(d))
    return (sp.identity(len(d)) - S).tocsr()


@pytest.mark.parametrize("threads, banded", [(1, False), (3, False), (2, True)])
def test_filtered_lanczos_equals_dense_smallest_eigenpairs(threads, banded, monkeypatch):
    """ARPACK on a Chebyshev polynomial of L: the k smallest eigenpairs of L, as LAPACK finds them, also when
    solved in a banded order (large graphs) and given back in the caller's."""
    import bigdr.core.filtered_lanczos as fl
    from bigdr.core.filtered_lanczos import filtered_lanczos

    monkeypatch.setattr(fl, "BANDED_MIN_ROWS", 1 if banded else 10**9)
    rng = np.random.default_rng(0)
    # Eight touching clusters in 12 dimensions: a crowded low end of the spectrum, as on single-cell data
    X = np.concatenate([rng.normal(size=(250, 12)) + 1.5 * rng.normal(size=12) for _ in range(8)])
    L = _knn_laplacian(X, 10)
    k = 12
    exact, U = scipy.linalg.eigh(L.toarray(), subset_by_index=[0, k])
    assert exact[k] - exact[k - 1] > 1e-6  # the k wanted are well defined
    w, V, residual = filtered_lanczos(L, k, rng.uniform(-1, 1, L.shape[0]), 1e-10, None, threads)
    np.testing.assert_allclose(w, exact[:k], atol=1e-10)
    assert residual <= 1e-9
    assert np.linalg.norm(L @ V - V * w, axis=0).max() == pytest.approx(residual)
    sine = np.linalg.norm(V - U[:, :k] @ (U[:, :k].T @ V), 2)  # the span of the k vectors
    assert sine <= 1e-6


def test_banded_is_the_symmetric_permutation_of_small_bandwidth():
    from bigdr.core.csr_rows import banded

    rng = np.random.default_rng(3)
    A = _knn_laplacian(rng.uniform(size=(400, 2)) * [20, 1], 6)  # a strip, its rows in random order
    B, order = banded(A)
    np.testing.assert_array_equal(np.sort(order), np.arange(400))
    np.testing.assert_array_equal(B.toarray(), A.toarray()[np.ix_(order, order)])
    x = rng.standard_normal(400)
    np.testing.assert_allclose((B @ x[order]), (A @ x)[order], rtol=1e-12, atol=1e-12)

    def bandwidth(M):
        coo = M.tocoo()
        return int(np.abs(coo.row - coo.col).max())

    assert bandwidth(B) < bandwidth(A) / 4


def _blobs_laplacian(sizes, seed=0, weak=None):
    """The symmetric diffusion Laplacian (alpha 1) of separate Gaussian blobs' kNN graphs; ``weak``: join
    blob 0 to blob 1 by one edge of that kernel weight (numerically apart when it is tiny)."""
    import scipy.sparse as sp

    from bigdr.graph.affinity import affinity, auto_epsilon
    from bigdr.graph.knn import knn_graph
    from bigdr.graph.operators import symmetric_operator

    rng = np.random.default_rng(seed)
    X = np.vstack([rng.standard_normal((m, 4)) + 50 * i for i, m in enumerate(sizes)])
    ind, dist = knn_graph(X, 8).compute()
    dist = dist.astype(np.float64)
    W = affinity(ind, dist, "gaussian", auto_epsilon(dist), True).W.tocsr()
    if weak is not None:
        W = (W + sp.csr_matrix(([weak, weak], ([0, sizes[0]], [sizes[0], 0])), shape=W.shape)).tocsr()
    return symmetric_operator(W, "markov", 1.0)


@pytest.mark.parametrize("solver", ["dense", "arpack", "lobpcg", "amg"])
@pytest.mark.parametrize("weak", [None, 1e-30])
def test_smallest_eigh_finds_every_null_vector_of_a_disconnected_graph(solver, weak):
    """Three components (or two joined by a weight no solver resolves): the three null vectors and the
    next pairs of the whole Laplacian, by every solver. Without the components, ARPACK's single start
    vector found two of the three null vectors (the third pair it returned was the fourth)."""
    from bigdr.core.sparse_eigen import smallest_eigh
    from bigdr.graph.operators import coupling_graph
    from bigdr.graph.sparse import connected_components

    op = _blobs_laplacian([500, 400, 300], weak=weak)
    found, labels, sizes = connected_components(coupling_graph(op.L))
    assert found == 3 and list(sizes) == [500, 400, 300]
    exact = scipy.linalg.eigh(op.L.toarray(), eigvals_only=True)[:6]
    eig = smallest_eigh(op.L, 6, solver, 0, op.null_vector, components=labels)
    assert np.allclose(eig.values[:3], 0, atol=1e-9) and np.allclose(eig.values[3:], exact[3:], rtol=1e-6)
    V = eig.vectors
    assert np.allclose(V.T @ V, np.eye(6), atol=1e-6)
    assert np.abs(op.L @ V - V * eig.values).max() < 1e-5
    for j in range(3):  # the null vectors: the null vector on one component each, largest first
        assert np.count_nonzero(V[:, j]) == sizes[j] and (labels[np.flatnonzero(V[:, j])] == j).all()
    few = smallest_eigh(op.L, 2, solver, 0, op.null_vector, components=labels)
    assert few.vectors.shape == (1200, 2) and np.allclose(few.values, 0, atol=1e-9)


def test_coupling_graph_drops_negligible_couplings_and_leaves_the_operator_alone():
    from bigdr.graph.operators import NEGLIGIBLE_COUPLING, coupling_graph

    op = _blobs_laplacian([300, 200], weak=1e-30)
    L = op.L
    before = (L.data.copy(), L.indices.copy(), L.indptr.copy())
    graph = coupling_graph(L)
    assert graph.nnz < L.nnz and graph[0, 300] == 0 and abs(L[0, 300]) > 0
    for a, b in zip(before, (L.data, L.indices, L.indptr)):
        np.testing.assert_array_equal(a, b)
    joined = _blobs_laplacian([300, 200], weak=1.0)
    assert abs(joined.L[0, 300]) > NEGLIGIBLE_COUPLING
    assert coupling_graph(joined.L)[0, 300] != 0
