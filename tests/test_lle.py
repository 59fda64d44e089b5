"""Locally linear embedding against scikit-learn, landmarks against all rows, updates, a cluster run."""

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import procrustes
from scipy.stats import spearmanr
from sklearn.datasets import make_s_curve
from sklearn.manifold import LocallyLinearEmbedding as SkLLE
from sklearn.manifold._locally_linear import barycenter_weights as sk_barycenter_weights

import bigdr
from bigdr.core.local_linear import barycenter_weights
from bigdr.exceptions import DisconnectedGraphWarning
from bigdr.graph.barycentric import landmark_statistics

K = 12


@pytest.fixture(scope="module")
def s_curve():
    X, t = make_s_curve(2000, random_state=0)
    return X, t


@pytest.fixture(scope="module")
def roll20k():
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(20_000, noise=0.05, seed=2)
    coords = coords.compute()
    return X.compute(), coords[:, 0], coords[:, 1]


def _aligned(Y, ref):
    return Y * np.sign(np.sum(Y * ref, axis=0))


@pytest.mark.parametrize("method", ["standard", "modified", "hessian", "ltsa"])
@pytest.mark.parametrize("solver", ["auto", "lu", "arpack"])
def test_equals_scikit_learn(s_curve, method, solver):
    X, _ = s_curve
    ref = SkLLE(n_neighbors=K, n_components=2, method=method, eigen_solver="dense").fit(X)
    model = bigdr.LocallyLinearEmbedding(2, K, method=method, eigen_solver=solver)
    Y = model.fit_transform(X)
    assert procrustes(ref.embedding_, Y)[2] <= 1e-6
    if solver != "lu":  # the others solve the same assembled matrix as scikit-learn
        np.testing.assert_allclose(model.reconstruction_error_, ref.reconstruction_error_, rtol=1e-5)


@pytest.mark.parametrize("method", ["hessian", "ltsa"])
@pytest.mark.parametrize("solver", ["dense", "lu"])
def test_rows_in_no_neighbour_list_are_placed_not_returned_as_null_vectors(s_curve, method, solver):
    # A row off the curve is nobody's neighbour: its column of C is empty and its unit vector is
    # an exact null vector of M, which the solvers would return instead of the embedding.
    X, t = s_curve
    off = X.mean(axis=0) + np.array([0.0, 4.0, 0.0])
    Xo = np.vstack([X, off])
    model = bigdr.LocallyLinearEmbedding(2, K, method=method, eigen_solver=solver)
    Y = model.fit_transform(Xo)
    assert model.eigenvalues_.min() > 1e-12
    assert max(abs(spearmanr(Y[:-1, j], t).correlation) for j in range(2)) > 0.99
    nbrs = np.argsort(np.linalg.norm(X - off, axis=1))[:K]
    np.testing.assert_allclose(Y[-1], barycenter_weights(off[None], X[nbrs][None], 1e-3)[0] @ Y[nbrs], atol=1e-12)


def test_barycenter_weights_equal_scikit_learn(s_curve):
    X, _ = s_curve
    ind = np.random.default_rng(0).integers(0, len(X), (50, 7))
    np.testing.assert_allclose(
        barycenter_weights(X[:50], X[ind], 1e-3), sk_barycenter_weights(X[:50], X, ind), atol=1e-10
    )


def test_transform_equals_scikit_learn_and_reproduces_training_rows(s_curve):
    X, _ = s_curve
    ref = SkLLE(n_neighbors=K, n_components=2, eigen_solver="dense").fit(X)
    model = bigdr.LocallyLinearEmbedding(2, K).fit(X)
    new = X[::7] + 0.01
    expected = ref.transform(new)
    got = model.transform(new)
    np.testing.assert_allclose(_aligned(got, expected), expected, atol=1e-6 * np.abs(expected).max())
    np.testing.assert_array_equal(model.transform(X), model.embedding_)
    lazy = model.transform(da.from_array(X, chunks=300))
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), model.embedding_)


def test_landmarks_against_all_rows(roll20k):
    X, t, height = roll20k
    exact = bigdr.LocallyLinearEmbedding(2, 10, landmarks=None).fit_transform(X)
    model = bigdr.LocallyLinearEmbedding(2, 10, landmarks=2000, max_samples=len(X))
    Y = model.fit_transform(X)
    assert model.mode_ == "landmarks" and model.reference_rows_.shape == (2000, 3)
    # The leading coordinate is the same; all-rows LLE's second one here is a harmonic of the
    # first (|Spearman| 0.43 with the roll's height), landmarks' is the height (0.9996 measured;
    # benchmarks/results/lle.md has the table over m).
    assert abs(np.corrcoef(exact[:, 0], Y[:, 0])[0, 1]) > 0.98  # 0.990 measured
    assert abs(spearmanr(Y[:, 0], t).statistic) > 0.99 and abs(spearmanr(Y[:, 1], height).statistic) > 0.95
    np.testing.assert_allclose(Y.T @ Y, np.eye(2), atol=1e-6)  # Y^T Y = I over all rows, as all-rows LLE
    np.testing.assert_array_equal(model.transform(X[:500]), Y[:500])


@settings(max_examples=5, deadline=None)
@given(st.lists(st.integers(50, 700), min_size=1, max_size=4))
def test_landmark_statistics_chunking_invariant(landmark_model, sizes):
    model, X = landmark_model
    frame = model._landmark_frame()
    edges = np.cumsum([0, *sizes])
    chunks = tuple(np.diff(edges[edges < len(X)])) + (len(X) - edges[edges < len(X)][-1],)
    (stats,) = dask.compute(landmark_statistics(da.from_array(X, chunks=(chunks, 3)), frame))
    np.testing.assert_allclose(stats.A.toarray(), model.landmark_statistics_A_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(stats.B.toarray(), model.landmark_statistics_B_, rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def landmark_model(swiss_roll_small):
    X, _ = swiss_roll_small
    return bigdr.LocallyLinearEmbedding(2, 10, landmarks=300, max_samples=1000).fit(X), X


def test_landmark_partial_fit_is_an_exact_merge(swiss_roll_small):
    X, _ = swiss_roll_small
    model = bigdr.LocallyLinearEmbedding(2, 10, landmarks=300, max_samples=1000).fit(X[:2000])
    frame = model._landmark_frame()
    model.partial_fit(X[2000:])
    (whole,) = dask.compute(landmark_statistics(da.from_array(X, chunks=700), frame))
    np.testing.assert_allclose(model.landmark_statistics_A_, whole.A.toarray(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.landmark_statistics_B_, whole.B.toarray(), rtol=1e-9, atol=1e-12)
    assert model.n_samples_seen_ == len(X) and len(model.drift_history_) == 1


def test_all_rows_partial_fit_matches_a_refit(swiss_roll_small):
    X, _ = swiss_roll_small
    model = bigdr.LocallyLinearEmbedding(2, 10, landmarks=None).fit(X[:2500])
    model.partial_fit(X[2500:])
    refit = bigdr.LocallyLinearEmbedding(2, 10, landmarks=None).fit_transform(X)
    assert procrustes(refit, model.transform(X))[2] < 1e-8
    assert model.n_samples_seen_ == len(X) and len(model.reference_rows_) == len(X)


def test_disconnected_graph_policy():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.standard_normal((300, 3)), 100 + rng.standard_normal((300, 3))])
    with pytest.warns(DisconnectedGraphWarning, match="2 connected components"):
        bigdr.LocallyLinearEmbedding(2, 8).fit(X)
    with pytest.raises(ValueError, match="connected components"):
        bigdr.LocallyLinearEmbedding(2, 8, on_disconnected="raise").fit(X)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"reg": 0}, "reg"),
        ({"reg": -1e-3}, "reg"),
        ({"method": "isomap"}, "method"),
        ({"method": "hessian", "n_neighbors": 4}, r"n_neighbors >= 6"),
        ({"method": "ltsa", "n_neighbors": 2}, r"n_neighbors >= 3"),
        ({"landmarks": 2}, "landmarks"),
        ({"landmarks": "some"}, "landmarks"),
        ({"eigen_solver": "magic"}, "eigen_solver"),
    ],
)
def test_bad_input(s_curve, params, match):
    X, _ = s_curve
    with pytest.raises(ValueError, match=match):
        bigdr.LocallyLinearEmbedding(2, **{"n_neighbors": 10, **params}).fit(X)


def test_landmark_mode_on_a_real_cluster(cluster_client, swiss_roll_small, tmp_path):
    X, _ = swiss_roll_small
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(X, chunks=(700, 3)), store)
    local = bigdr.LocallyLinearEmbedding(2, 10, landmarks=300, max_samples=1500).fit(X)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = bigdr.LocallyLinearEmbedding(2, 10, landmarks=300, max_samples=1500)
        Y = remote.fit_transform(str(store)).compute()
    np.testing.assert_allclose(remote.eigenvalues_, local.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(Y, local.transform(X), atol=1e-8)


def test_landmark_statistics_pieces_do_not_change_them(landmark_model, monkeypatch):
    import bigdr.graph.barycentric as glle

    model, X = landmark_model
    monkeypatch.setattr(glle, "STATS_PIECE_ROWS", 37)
    (stats,) = dask.compute(landmark_statistics(da.from_array(X, chunks=1000), model._landmark_frame()))
    np.testing.assert_allclose(stats.A.toarray(), model.landmark_statistics_A_, rtol=1e-9, atol=1e-12)
    assert stats.n == len(X)
