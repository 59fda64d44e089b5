import dask
import dask.array as da
import numpy as np
import pytest
from scipy.spatial import procrustes
from scipy.stats import spearmanr
from sklearn.manifold import Isomap as SkIsomap

from bigdr import Isomap, load
from bigdr.datasets import make_swiss_roll
from bigdr.exceptions import DisconnectedGraphWarning


@pytest.fixture(scope="module")
def roll5k():
    X, coords = make_swiss_roll(5000, noise=0.0, seed=3)
    return X.compute(), coords.compute()[:, 0]


@pytest.fixture(scope="module")
def exact5k(roll5k):
    X, _ = roll5k
    model = Isomap(n_neighbors=10, landmarks=None)
    return model, model.fit_transform(X)


def test_exact_matches_sklearn(swiss_roll_small):
    X = swiss_roll_small[0][:2000]
    ref = SkIsomap(n_neighbors=8, n_components=2).fit_transform(X)
    model = Isomap(n_neighbors=8, landmarks=None)
    ours = model.fit_transform(X)
    assert model.mode_ == "exact" and model.geodesics_.shape == (2000, 2000)
    assert procrustes(ref, ours)[2] < 1e-6


def test_radius_graph_matches_sklearn(swiss_roll_small):
    X = swiss_roll_small[0][:1500]
    ref = SkIsomap(n_neighbors=None, radius=3.0, n_components=2).fit_transform(X)
    ours = Isomap(n_neighbors=None, radius=3.0, landmarks=None).fit_transform(X)
    assert procrustes(ref, ours)[2] < 1e-6


def test_landmark_mode_close_to_exact(roll5k, exact5k):
    X, t = roll5k
    _, exact = exact5k
    model = Isomap(n_neighbors=10, landmarks=300)
    Y = model.fit_transform(X)
    assert model.mode_ == "landmark" and model.geodesics_.shape == (5000, 300)
    assert procrustes(exact, Y)[2] < 1e-3
    assert abs(spearmanr(Y[:, 0], t).statistic) > 0.99


def test_sampled_graph_mode(roll5k, exact5k):
    X, t = roll5k
    _, exact = exact5k
    model = Isomap(n_neighbors=10, landmarks=200, graph_sample=2500)
    Y = model.fit_transform(X)
    assert model.mode_ == "sampled" and model.reference_rows_.shape == (2500, 3)
    assert procrustes(exact, Y)[2] < 1e-2
    assert abs(spearmanr(Y[:, 0], t).statistic) > 0.99


def test_sampled_mode_does_not_depend_on_chunking(roll5k):
    X, _ = roll5k
    a = Isomap(landmarks=100, graph_sample=2000).fit_transform(da.from_array(X, chunks=1000)).compute()
    b = Isomap(landmarks=100, graph_sample=2000).fit_transform(da.from_array(X, chunks=777)).compute()
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_transform_of_held_out_rows(roll5k, exact5k):
    X, _ = roll5k
    _, exact = exact5k
    model = Isomap(n_neighbors=10, landmarks=300).fit(X[:4500])
    held = model.transform(X[4500:])
    # Held-out rows land where fitting them with the rest put them.
    assert procrustes(exact[4500:], held)[2] < 2e-3
    again = model.transform(X[:200])
    np.testing.assert_allclose(again, model.embedding_[:200], atol=1e-4 * np.abs(model.embedding_).max())
    lazy = model.transform(da.from_array(X[4500:], chunks=128))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), held)


def test_residual_variance_finds_the_dimension(roll5k):
    rv = Isomap(n_components=4, landmarks=200).fit(roll5k[0]).residual_variance_
    assert rv[0] > rv[1] and rv[1] < 0.02
    assert abs(rv[2] - rv[1]) < 0.01  # the elbow is at 2


def test_given_landmark_rows(roll5k):
    X, _ = roll5k
    rows = X[::50] + 0.01
    model = Isomap(landmarks=rows).fit(X)
    assert model.mode_ == "landmark" and len(model.landmark_indices_) == len(rows)
    np.testing.assert_allclose(model.reference_rows_[model.landmark_indices_], rows)
    assert np.isfinite(model.embedding_).all()


def _two_blobs():
    rng = np.random.default_rng(0)
    return np.vstack([rng.standard_normal((600, 3)), rng.standard_normal((150, 3)) + 50.0])


def test_disconnected_graph_raise_largest_join():
    X = _two_blobs()
    with pytest.raises(ValueError, match=r"2 connected components \(sizes 600, 150\)"):
        Isomap(n_neighbors=5).fit(X)
    with pytest.warns(DisconnectedGraphWarning, match="150 of 750 rows"):
        model = Isomap(n_neighbors=5, on_disconnected="largest").fit(X)
    assert model.n_components_found_ == 2
    assert np.isnan(model.embedding_[600:]).all() and np.isfinite(model.embedding_[:600]).all()
    joined = Isomap(n_neighbors=5, on_disconnected="join").fit(X)
    assert np.isfinite(joined.embedding_).all()
    assert joined.embedding_[:600, 0].mean() * joined.embedding_[600:, 0].mean() < 0  # far apart on axis 1


@pytest.mark.parametrize(
    "kwargs, X, match",
    [
        (dict(n_neighbors=5, radius=1.0), None, "exactly one"),
        (dict(n_neighbors=0), None, "n_neighbors"),
        (dict(n_neighbors=5000), None, "n_neighbors"),
        (dict(landmarks=2), None, "landmarks=2"),
        (dict(landmarks="many"), None, "landmarks"),
        (dict(graph_sample=1), None, "graph_sample"),
        (dict(landmarks=None, graph_sample=100), None, "graph_sample=None"),
        (dict(metric="nope"), None, "metric"),
        (dict(on_disconnected="drop"), None, "on_disconnected"),
        (dict(n_components=0), None, "n_components"),
        (dict(), "nan", "NaN"),
        (dict(), "ragged", "features"),
    ],
)
def test_bad_input(swiss_roll_small, kwargs, X, match):
    data = swiss_roll_small[0][:300].copy()
    if X == "nan":
        data[7, 1] = np.nan
    with pytest.raises((ValueError, TypeError), match=match):
        model = Isomap(**kwargs).fit(data)
        if X == "ragged":
            model.transform(data[:, :2])


def test_persistence_round_trip(tmp_path, swiss_roll_small):
    X = swiss_roll_small[0]
    model = Isomap(landmarks=100).fit(X)
    model.save(str(tmp_path / "iso"))
    back = load(str(tmp_path / "iso"))
    np.testing.assert_array_equal(back.transform(X[:100]), model.transform(X[:100]))
    assert back.mode_ == "landmark"


def test_distributed_cluster_gives_the_same_embedding(cluster_client, roll5k):
    X, _ = roll5k
    Xd = da.from_array(X, chunks=1000)
    local = Isomap(landmarks=64, graph_sample=3000).fit(Xd)
    Y_local = local.transform(Xd).compute(scheduler="threads")
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = Isomap(landmarks=64, graph_sample=3000).fit(Xd)
        Y_remote = remote.fit_transform(Xd).compute()
        lm = Isomap(landmarks=64).fit(X)
    np.testing.assert_allclose(remote.geodesics_, local.geodesics_)
    np.testing.assert_allclose(Y_remote, Y_local, atol=1e-9)
    assert np.isfinite(lm.embedding_).all()
