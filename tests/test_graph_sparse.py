import numpy as np
import pytest

from bigdr.exceptions import DisconnectedGraphWarning
from bigdr.graph.knn import knn_graph
from bigdr.graph.sparse import (
    connected_components,
    dense_distance_graph,
    largest_component,
    radius_graph,
    resolve_components,
    to_csr,
)


def test_union_and_mutual_are_symmetric_and_nested(swiss_roll_small):
    X, _ = swiss_roll_small
    g = knn_graph(X, 8)
    U, M, D = to_csr(g, "union"), to_csr(g, "mutual"), to_csr(g, None)
    for A in (U, M):
        assert abs(A - A.T).max() == 0
    assert M.nnz <= D.nnz <= U.nnz
    assert ((M > 0).astype(int) - (U > 0).astype(int)).max() <= 0  # mutual is a subgraph of union
    ind, dist = g.compute()
    np.testing.assert_allclose(D[np.arange(len(X)), ind[:, 0]].A1, dist[:, 0], rtol=1e-6)


def test_duplicate_points_keep_their_edges():
    X = np.array([[0.0, 0], [0, 0], [1, 0], [1, 0], [2, 0]])
    A = to_csr(knn_graph(X, 2, method="kdtree"), "union")
    assert A[0, 1] > 0 and A[0, 1] < 1e-30
    assert connected_components(A)[0] == 1


def test_components_of_a_deliberately_disconnected_set():
    rng = np.random.default_rng(0)
    X = np.vstack(
        [rng.standard_normal((300, 2)), rng.standard_normal((100, 2)) + 100, rng.standard_normal((50, 2)) - 100]
    )
    g = knn_graph(X, 5)
    n, labels, sizes = connected_components(g)
    assert n == 3 and list(sizes) == [300, 100, 50]
    assert (labels[:300] == 0).all() and (labels[300:400] == 1).all()
    A = to_csr(g)
    with pytest.raises(ValueError, match=r"3 connected components \(sizes 300, 100, 50\).*n_neighbors"):
        resolve_components(A, "raise")
    with pytest.warns(DisconnectedGraphWarning):
        _, eligible, found = resolve_components(A, "warn")
    assert found == 3 and eligible.all()
    with pytest.warns(DisconnectedGraphWarning):
        _, eligible, _ = resolve_components(A, "largest")
    np.testing.assert_array_equal(np.flatnonzero(eligible), np.arange(300))
    joined, _, _ = resolve_components(A, "join", points=X)
    assert connected_components(joined)[0] == 1
    np.testing.assert_array_equal(largest_component(g), np.arange(300))
    found, same, sizes = connected_components(A, symmetric=True)  # the union graph's pattern is symmetric
    assert found == 3 and list(sizes) == [300, 100, 50]
    np.testing.assert_array_equal(same, labels)


def test_radius_graph_matches_brute_force():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(400, 3))
    A = radius_graph(X, 0.15)
    D = dense_distance_graph(X)
    expected = (D <= 0.15) & ~np.eye(400, dtype=bool)
    np.testing.assert_array_equal(A.toarray() > 0, expected)
    np.testing.assert_allclose(A.toarray()[expected], D[expected], rtol=1e-6)
    with pytest.raises(ValueError, match="radius"):
        radius_graph(X, -1)


def test_dense_graph_refuses_large_n():
    with pytest.raises(ValueError, match="kNN graph"):
        dense_distance_graph(np.zeros((30, 2)), max_samples=20)


def test_bad_options(swiss_roll_small):
    g = knn_graph(swiss_roll_small[0], 3)
    with pytest.raises(ValueError, match="symmetrize"):
        to_csr(g, "both")
    with pytest.raises(ValueError, match="on_disconnected"):
        resolve_components(to_csr(g), "explode")


def test_geodesic_coordinates_follow_scikit_learns_isomap_and_the_arc_length():
    from sklearn.manifold import Isomap

    from bigdr.graph.sparse import geodesic_coordinates

    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 1.5 * np.pi, 1200))  # a three-quarter helix
    X = np.column_stack([np.cos(t), np.sin(t), 0.2 * t]) + 0.02 * rng.standard_normal((1200, 3))
    z = geodesic_coordinates(X, 1)
    assert z.shape == (1200, 1) and z.min() == 0.0 and z.max() == 1.0
    reference = Isomap(n_neighbors=10, n_components=1).fit_transform(X)[:, 0]
    assert abs(np.corrcoef(z[:, 0], reference)[0, 1]) > 0.999
    assert abs(np.corrcoef(z[:, 0], t)[0, 1]) > 0.999  # arc length, here proportional to t
    sheet = geodesic_coordinates(np.column_stack([rng.uniform(0, 2, 800), rng.uniform(0, 1, 800)]), 2)
    assert sheet.shape == (800, 2) and np.allclose(sheet.min(0), 0) and np.allclose(sheet.max(0), 1)
