import dask
import dask.array as da
import numpy as np
import pytest

from bigdr.core.eigen import smallest_eigh
from bigdr.graph.affinity import affinity
from bigdr.graph.blocked import blocked_affinity, blocked_operator
from bigdr.graph.knn import knn_graph
from bigdr.graph.operators import symmetric_operator


@pytest.fixture(scope="module")
def graph(swiss_roll_small):
    X = swiss_roll_small[0][:900]
    ind, dist = knn_graph(X, 8, method="kdtree").compute()
    return ind, dist


def _dask(graph, chunk):
    ind, dist = graph
    return da.from_array(ind, chunks=(chunk, -1)), da.from_array(dist, chunks=(chunk, -1))


@pytest.mark.parametrize(
    "kernel, self_loops", [("gaussian", True), ("gaussian", False), ("connectivity", False), ("umap", True)]
)
@pytest.mark.parametrize("chunk", [900, 250, 77])
def test_blocked_affinity_equals_the_in_process_one(graph, kernel, self_loops, chunk):
    ind, dist = graph
    eps = float(np.median(dist[:, -1])) / 2
    W = blocked_affinity(*_dask(graph, chunk), kernel, eps, self_loops)
    ref = affinity(ind, dist.astype(np.float64), kernel, eps, self_loops).W
    assert abs(W.to_csr() - ref).max() < 1e-15
    X = np.random.default_rng(0).standard_normal((len(ind), 3))
    np.testing.assert_allclose(W.matmat(X), ref @ X, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind, alpha", [("markov", 0.5), ("markov", 1.0), ("symmetric", 0.0), ("unnormalized", 0.0)])
def test_blocked_operator_and_its_eigenpairs_equal_the_in_process_ones(graph, kind, alpha):
    ind, dist = graph
    eps = float(np.median(dist[:, -1])) / 2
    W = blocked_affinity(*_dask(graph, 200), "gaussian", eps, kind == "markov")
    op, _ = blocked_operator(W, kind, alpha)
    ref = symmetric_operator(affinity(ind, dist.astype(np.float64), "gaussian", eps, kind == "markov").W, kind, alpha)
    np.testing.assert_allclose(op.q, ref.q, rtol=1e-12)
    if ref.d is not None:
        np.testing.assert_allclose(op.d, ref.d, rtol=1e-12)
    X = np.random.default_rng(1).standard_normal((len(ind), 4))
    np.testing.assert_allclose(op.L @ X, ref.L @ X, rtol=1e-10, atol=1e-12)
    dense = smallest_eigh(ref.L, 5, "dense")
    blocked = smallest_eigh(op.L, 5, "lobpcg", 0, op.null_vector, tol=1e-9, maxiter=3000)
    np.testing.assert_allclose(blocked.values, dense.values, atol=1e-8)


def test_blocked_operator_on_a_real_cluster(cluster_client, graph):
    ind, dist = graph
    eps = float(np.median(dist[:, -1])) / 2
    local = blocked_affinity(*_dask(graph, 300), "gaussian", eps, True).to_csr()
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        W = blocked_affinity(*_dask(graph, 300), "gaussian", eps, True)
        op, _ = blocked_operator(W, "markov", 0.5)
        X = np.random.default_rng(2).standard_normal((len(ind), 2))
        remote = op.L @ X
        np.testing.assert_array_equal(W.to_csr().toarray(), local.toarray())
    ref = symmetric_operator(local, "markov", 0.5)
    np.testing.assert_allclose(remote, ref.L @ X, rtol=1e-10, atol=1e-12)
