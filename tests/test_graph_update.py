import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import dijkstra

from bigdr.blockwise.sampling import row_keys
from bigdr.datasets import make_swiss_roll
from bigdr.graph.incremental import relax_geodesics, reservoir, update_knn
from bigdr.graph.neighbors import NeighborIndex, drop_self
from bigdr.graph.sparse import csr_from_lists, landmark_geodesics


def _knn(rows, k):
    ind, dist = NeighborIndex("euclidean", "kdtree").fit(rows).query_block(rows, k + 1)
    return drop_self(ind, dist, np.arange(len(rows)))


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(1, 299), max_size=5), cap=st.integers(20, 120))
def test_reservoir_is_the_smallest_keys_whatever_the_batches(cuts, cap):
    keys = row_keys(0, 400, seed=7)
    protected_rows = np.array([3, 50, 77])  # always kept, outside the cap
    ref = np.arange(100)
    for batch in np.split(np.arange(100, 400), sorted(set(cuts))):
        keep, enter = reservoir(keys[ref], np.isin(ref, protected_rows), keys[batch], cap)
        ref = np.concatenate([ref[keep], batch[enter]])
    free = np.setdiff1d(np.arange(400), protected_rows)
    expected = np.union1d(protected_rows, free[np.argsort(keys[free])[:cap]])
    np.testing.assert_array_equal(np.sort(ref), expected)


def test_reservoir_without_cap_keeps_everything():
    keep, enter = reservoir(np.random.rand(5), np.zeros(5, bool), np.random.rand(3), None)
    assert keep.all() and enter.all()


@pytest.fixture(scope="module")
def roll():
    X, _ = make_swiss_roll(4000, noise=0.05, seed=1)
    return np.asarray(X.compute())


def test_updated_lists_agree_with_a_rebuilt_graph(roll):
    k = 10
    old = roll[:3000]
    ind, dist = _knn(old, k)
    keep = np.ones(3000, bool)
    keep[np.random.default_rng(0).choice(3000, 300, replace=False)] = False  # 300 rows leave
    upd = update_knn(old, ind, dist, keep, roll[3000:3400], method="kdtree")
    np.testing.assert_array_equal(upd.rows, np.vstack([old[keep], roll[3000:3400]]))
    ref_ind, ref_dist = _knn(upd.rows, k)
    same = (np.sort(upd.indices, axis=1) == np.sort(ref_ind, axis=1)).all(axis=1)
    assert same.mean() > 0.999
    np.testing.assert_allclose(upd.distances, ref_dist, rtol=1e-5)
    assert upd.old_position[~keep].max() == -1
    np.testing.assert_array_equal(upd.old_position[keep], np.arange(keep.sum()))
    assert set(range(2700, 3100)) <= set(upd.changed)  # the entering rows


def test_relaxation_to_convergence_is_dijkstra(roll):
    k = 8
    old = roll[:3000]
    ind, dist = _knn(old, k)
    landmarks = np.arange(0, 3000, 100)
    G_old = landmark_geodesics(csr_from_lists(ind, dist), landmarks)
    upd = update_knn(old, ind, dist, np.ones(3000, bool), roll[3000:3500], method="kdtree")
    graph = csr_from_lists(upd.indices, upd.distances)
    G = np.vstack([G_old, np.full((500, len(landmarks)), np.inf, np.float32)])
    touched = relax_geodesics(graph, G, upd.changed, rtol=0.0)
    # The fixed point: G(i) = min_j d_new(i, j) + G_old(j), with d_new the shortest paths of the new
    # graph (edges a new row displaced from a list keep the paths through them). A Dijkstra from a
    # virtual source joined to every row j by an edge of length G_old(j) + 1 computes it.
    n = graph.shape[0]
    for col in range(0, len(landmarks), 7):
        start = np.r_[G_old[:, col], np.full(500, np.inf)] + 1.0
        finite = np.flatnonzero(np.isfinite(start))
        extra = sp.csr_matrix((start[finite], (np.full(len(finite), n), finite)), shape=(n + 1, n + 1))
        big = sp.bmat([[graph, None], [None, sp.csr_matrix((1, 1))]]).tocsr() + extra
        expected = dijkstra(big, directed=True, indices=n)[:n] - 1.0
        np.testing.assert_allclose(G[:, col], expected, rtol=1e-5)
    assert (G <= landmark_geodesics(graph, landmarks) * (1 + 1e-6)).all()
    assert touched >= 500
    # The default propagates only large decreases: the new rows are placed, old rows change little.
    G2 = np.vstack([G_old, np.full((500, len(landmarks)), np.inf, np.float32)])
    relax_geodesics(graph, G2, upd.changed)
    assert np.isfinite(G2).all()
    assert (G2 >= G * (1 - 1e-6)).all()  # unpropagated decreases leave distances a little long
    rel = (G2 - G) / np.maximum(G, 1e-6)  # 0 / 0 at the landmarks themselves
    assert (rel > 0.1).mean() < 1e-3 and rel.max() < 0.25


def test_relaxation_cut_short_warns():
    from bigdr.exceptions import ConvergenceWarning

    n = 50  # a path: the distance from row 0 needs n - 1 sweeps to reach the far end
    path = sp.diags([np.ones(n - 1), np.ones(n - 1)], [1, -1], format="csr")
    G = np.full((n, 1), np.inf, np.float32)
    G[0] = 0
    with pytest.warns(ConvergenceWarning, match="max_sweeps=5"):
        relax_geodesics(path, G, np.array([1]), max_sweeps=5)
    G = np.full((n, 1), np.inf, np.float32)
    G[0] = 0
    relax_geodesics(path, G, np.array([1]))
    assert G[-1, 0] == n - 1
