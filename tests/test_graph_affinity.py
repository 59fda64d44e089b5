import numpy as np
import pytest
import scipy.sparse as sp

from bigdr.graph.affinity import affinity, auto_epsilon, check_alpha, new_row_weights
from bigdr.graph.knn import knn_graph
from bigdr.graph.operators import laplacian, markov_matrix, normalise


@pytest.fixture(scope="module")
def graph(swiss_roll_small):
    X = swiss_roll_small[0][:800]
    ind, dist = knn_graph(X, 8).compute()
    return X, ind, dist.astype(np.float64)


@pytest.mark.parametrize("kernel", ["gaussian", "connectivity"])
def test_affinity_is_symmetric_and_local(graph, kernel):
    X, ind, dist = graph
    eps = auto_epsilon(dist)
    W = affinity(ind, dist, kernel, eps, self_loops=False).W
    assert abs(W - W.T).max() < 1e-15
    i, j = W.nonzero()
    d = np.linalg.norm(X[i] - X[j], axis=1)
    if kernel == "gaussian":
        np.testing.assert_allclose(np.asarray(W[i, j]).ravel(), np.exp(-(d**2) / (2 * eps**2)), rtol=1e-5)
    else:
        assert set(np.unique(W.data)) <= {0.5, 1.0}
    # Every kNN edge is present.
    assert all(W[r, c] > 0 for r in range(0, 800, 37) for c in ind[r])


def test_epsilon_rule(graph):
    _, _, dist = graph
    assert auto_epsilon(dist) == pytest.approx(np.median(dist[:, -1]) / 2)
    with pytest.raises(ValueError, match="duplicates"):
        auto_epsilon(np.zeros((10, 3)))


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_markov_rows_sum_to_one_and_spectrum_within_unit_disc(graph, alpha):
    _, ind, dist = graph
    W = affinity(ind, dist, "gaussian", auto_epsilon(dist), True).W
    M = markov_matrix(W, alpha)
    np.testing.assert_allclose(M @ np.ones(M.shape[0]), 1.0, atol=1e-12)  # M 1 = 1 (Theorem 4.6)
    lam = np.linalg.eigvals(M.toarray())
    assert np.abs(lam).max() <= 1 + 1e-10 and np.isclose(np.abs(lam).max(), 1.0)
    # S is the symmetric conjugate of M: the same spectrum.
    S = normalise(W, alpha).S.toarray()
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(S)), np.sort(lam.real), atol=1e-10)


def test_three_laplacians(graph):
    _, ind, dist = graph
    W = affinity(ind, dist, "gaussian", auto_epsilon(dist), False).W
    d = np.asarray(W.sum(axis=1)).ravel()
    Lu = laplacian(W, "unnormalized").toarray()
    np.testing.assert_allclose(Lu @ np.ones(len(d)), 0, atol=1e-12)
    Ls = laplacian(W, "symmetric").toarray()
    Lr = laplacian(W, "random_walk").toarray()
    np.testing.assert_allclose(Ls, np.diag(d**-0.5) @ Lu @ np.diag(d**-0.5), atol=1e-12)
    np.testing.assert_allclose(Lr, np.diag(1 / d) @ Lu, atol=1e-12)
    with pytest.raises(ValueError, match="laplacian"):
        laplacian(W, "nope")


def test_umap_kernel_equals_umap_learns_fuzzy_simplicial_set(graph):
    """UMAP's own function (through scanpy's connectivities) on the same neighbours, self included as it counts."""
    from umap.umap_ import fuzzy_simplicial_set

    X, ind, dist = graph
    n = len(X)
    with_self = np.column_stack([np.arange(n), ind]), np.column_stack([np.zeros(n), dist])
    G, _, _ = fuzzy_simplicial_set(X, ind.shape[1] + 1, None, "euclidean", knn_indices=with_self[0],
                                   knn_dists=with_self[1])  # fmt: skip
    aff = affinity(ind, dist, "umap", 1.0, self_loops=True)  # no self-loops, whatever is asked
    assert abs(aff.W - aff.W.T).max() < 1e-15 and aff.W.diagonal().max() == 0
    assert abs(aff.W - G).max() < 1e-5  # umap-learn computes in float32
    # Every row keeps an edge of weight 1 (to its nearest neighbour), however far it lies.
    assert np.allclose(aff.W.max(axis=1).toarray(), 1.0)
    rho, sigma = aff.scales.T
    np.testing.assert_allclose(rho, dist[:, 0])
    total = np.exp(-np.maximum(dist - rho[:, None], 0) / sigma[:, None]).sum(axis=1)
    np.testing.assert_allclose(total, np.log2(ind.shape[1] + 1), atol=1e-4)


@pytest.mark.parametrize("kernel, loops", [("gaussian", True), ("connectivity", False), ("umap", False)])
def test_new_row_weights_reproduce_a_reference_row(graph, kernel, loops):
    X, ind, dist = graph
    eps = auto_epsilon(dist)
    aff = affinity(ind, dist, kernel, eps, loops)
    from bigdr.graph.neighbors import NeighborIndex

    qi, qd = NeighborIndex(method="kdtree").fit(X).query_block(X[:200], 40)
    w, is_self = new_row_weights(qi, qd.astype(np.float64), 8, aff.radius, kernel, eps, loops, aff.scales)
    assert is_self.all()
    got = sp.csr_matrix((w.ravel(), (np.repeat(np.arange(200), 40), qi.ravel())), shape=(200, 800)).toarray()
    # 40 candidates reach every reverse neighbour of these rows.
    np.testing.assert_allclose(got, aff.W[:200].toarray(), atol=1e-6)


def test_alpha_check():
    assert check_alpha(0.5) == 0.5
    for bad in (-0.1, 1.5, "x", True):
        with pytest.raises(ValueError, match="alpha"):
            check_alpha(bad)
