import dask
import dask.array as da
import numpy as np
import pytest

from bigdr.blockwise.lobpcg import lobpcg
from bigdr.blockwise.rowblocks import RowBlocks
from bigdr.core.sparse_eigen import smallest_eigh
from bigdr.exceptions import ConvergenceWarning
from bigdr.graph.affinity import affinity
from bigdr.graph.blocked import blocked_affinity, blocked_operator
from bigdr.graph.knn import knn_graph
from bigdr.graph.operators import symmetric_operator


@pytest.fixture(scope="module")
def graph(swiss_roll_small):
    # 600 rows: unpreconditioned LOBPCG needs 200-340 iterations here, against 470-660 on 900 rows
    X = swiss_roll_small[0][:600]
    ind, dist = knn_graph(X, 8, method="kdtree").compute()
    return ind, dist


def _dask(graph, chunk):
    ind, dist = graph
    return da.from_array(ind, chunks=(chunk, -1)), da.from_array(dist, chunks=(chunk, -1))


@pytest.mark.parametrize(
    "kernel, self_loops", [("gaussian", True), ("gaussian", False), ("connectivity", False), ("umap", True)]
)
@pytest.mark.parametrize("chunk", [600, 250, 77])
def test_blocked_affinity_equals_the_in_process_one(graph, kernel, self_loops, chunk):
    ind, dist = graph
    eps = float(np.median(dist[:, -1])) / 2
    W = blocked_affinity(*_dask(graph, chunk), kernel, eps, self_loops)
    ref = affinity(ind, dist.astype(np.float64), kernel, eps, self_loops).W
    assert abs(W.to_csr() - ref).max() < 1e-15
    X = np.random.default_rng(0).standard_normal((len(ind), 3))
    np.testing.assert_allclose(W.times(RowBlocks.scatter(X, W.starts)).compute(), ref @ X, rtol=1e-12, atol=1e-12)


def _operators(graph, kind, alpha, chunk):
    """The blocked affinity and operator of ``graph`` (row blocks of ``chunk``) and the in-process operator."""
    ind, dist = graph
    eps = float(np.median(dist[:, -1])) / 2
    W = blocked_affinity(*_dask(graph, chunk), "gaussian", eps, kind == "markov")
    ref = symmetric_operator(affinity(ind, dist.astype(np.float64), "gaussian", eps, kind == "markov").W, kind, alpha)
    return W, blocked_operator(W, kind, alpha), ref


@pytest.mark.parametrize("kind, alpha", [("markov", 0.5), ("markov", 1.0), ("symmetric", 0.0), ("unnormalized", 0.0)])
def test_blocked_operator_equals_the_in_process_one(graph, kind, alpha):
    W, op, ref = _operators(graph, kind, alpha, 200)
    ind = graph[0]
    np.testing.assert_allclose(op.q.compute().ravel(), ref.q, rtol=1e-12)
    if ref.d is not None:
        np.testing.assert_allclose(op.d.compute().ravel(), ref.d, rtol=1e-12)
    X = np.random.default_rng(1).standard_normal((len(ind), 4))
    LX = op.laplacian(RowBlocks.scatter(X, W.starts)).compute()
    np.testing.assert_allclose(LX, ref.L @ X, rtol=1e-10, atol=1e-12)
    null = op.root().compute().ravel()
    np.testing.assert_allclose(null / np.linalg.norm(null), ref.null_vector, rtol=1e-12)


@pytest.mark.parametrize("kind, alpha", [("markov", 0.5), ("unnormalized", 0.0)])
def test_blocked_lobpcg_finds_the_dense_eigenpairs(graph, kind, alpha):
    W, op, ref = _operators(graph, kind, alpha, 300)
    ind = graph[0]
    dense = smallest_eigh(ref.L, 5, "dense")
    start = RowBlocks.scatter(np.random.default_rng(2).standard_normal((len(ind), 4)), W.starts)
    blocked = lobpcg(op.laplacian, start, constraint=op.root(), tol=1e-9, maxiter=3000)
    np.testing.assert_allclose(blocked.values, dense.values[1:], rtol=1e-8, atol=1e-12)
    assert blocked.residual <= 1e-9 and blocked.products == blocked.n_iter + 1
    V = blocked.vectors.compute()
    np.testing.assert_allclose(V.T @ V, np.eye(4), atol=1e-10)
    # the dense eigenvectors' subspace (their signs aside), and orthogonal to the null vector
    np.testing.assert_allclose(np.abs(np.sum(dense.vectors[:, 1:] * V, axis=0)), 1, atol=1e-6)
    assert np.abs(ref.null_vector @ V).max() < 1e-10


def test_blocked_lobpcg_warns_when_it_runs_out_of_iterations(graph):
    ind, dist = graph
    W = blocked_affinity(*_dask(graph, 300), "gaussian", float(np.median(dist[:, -1])) / 2, True)
    op = blocked_operator(W, "markov", 0.5)
    start = RowBlocks.scatter(np.random.default_rng(2).standard_normal((len(ind), 3)), W.starts)
    with pytest.warns(ConvergenceWarning, match=r"stopped after 5 iterations with residual"):
        out = lobpcg(op.laplacian, start, constraint=op.root(), tol=1e-9, maxiter=5)
    assert out.residual > 1e-9 and out.n_iter == 5


def test_blocked_operator_on_a_real_cluster(cluster_client, graph):
    ind, dist = graph
    eps = float(np.median(dist[:, -1])) / 2
    local = blocked_affinity(*_dask(graph, 300), "gaussian", eps, True).to_csr()
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        W = blocked_affinity(*_dask(graph, 300), "gaussian", eps, True)
        op = blocked_operator(W, "markov", 0.5)
        X = np.random.default_rng(2).standard_normal((len(ind), 2))
        remote = op.laplacian(RowBlocks.scatter(X, W.starts)).compute()
        np.testing.assert_array_equal(W.to_csr().toarray(), local.toarray())
    ref = symmetric_operator(local, "markov", 0.5)
    np.testing.assert_allclose(remote, ref.L @ X, rtol=1e-10, atol=1e-12)
