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
from bigdr.graph.sparse import csr_from_lists, locality_order
from bigdr.manifold.geodesic import GeodesicExtension


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
    model = Isomap(n_neighbors=10, landmarks=200, max_samples=2500)
    Y = model.fit_transform(X)
    assert model.mode_ == "sampled" and model.reference_rows_.shape == (2500, 3)
    assert procrustes(exact, Y)[2] < 1e-2
    assert abs(spearmanr(Y[:, 0], t).statistic) > 0.99


def test_sampled_mode_does_not_depend_on_chunking(roll5k):
    X, _ = roll5k
    a = Isomap(landmarks=100, max_samples=2000).fit_transform(da.from_array(X, chunks=1000)).compute()
    b = Isomap(landmarks=100, max_samples=2000).fit_transform(da.from_array(X, chunks=777)).compute()
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


def test_placement_in_locality_order_gives_the_same_coordinates(roll5k):
    # The geodesics table is laid out in the graph's locality order and rows are visited by nearest
    # reference row, for the cache; the coordinates must not change by a bit.
    X, _ = roll5k
    model = Isomap(n_neighbors=10, landmarks=300).fit(X[:4500])
    ext = model._extension()
    assert ext.rank is not None and np.array_equal(np.sort(ext.rank), np.arange(len(model.reference_rows_)))
    plain = GeodesicExtension(ext.index, model.geodesics_, ext.tri, ext.k, None, model.graph_distances_)
    assert plain.rank is None
    np.testing.assert_array_equal(ext.embed_block(X[4500:]), plain.embed_block(X[4500:]))


def test_locality_order_brings_graph_neighbours_together():
    rng = np.random.default_rng(0)
    shuffled = rng.permutation(500)  # a path graph 0-1-2-..., its rows stored in random order
    position = np.empty(500, dtype=np.int64)
    position[shuffled] = np.arange(500)
    ind = np.array([[position[node + 1] if node < 499 else position[node - 1]] for node in shuffled])
    order = locality_order(csr_from_lists(ind, np.ones(ind.shape)))
    assert np.array_equal(np.sort(order), np.arange(500))
    rank = np.empty(500, dtype=np.int64)
    rank[order] = np.arange(500)
    assert np.abs(rank[ind[:, 0]] - rank).max() == 1


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
        (dict(max_samples=1), None, "max_samples"),
        (dict(landmarks=None, max_samples=100), None, "max_samples=None"),
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
    local = Isomap(landmarks=64, max_samples=3000).fit(Xd)
    Y_local = local.transform(Xd).compute(scheduler="threads")
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = Isomap(landmarks=64, max_samples=3000).fit(Xd)
        Y_remote = remote.fit_transform(Xd).compute()
        lm = Isomap(landmarks=64).fit(X)
    np.testing.assert_allclose(remote.geodesics_, local.geodesics_)
    np.testing.assert_allclose(Y_remote, Y_local, atol=1e-9)
    assert np.isfinite(lm.embedding_).all()


# -- partial_fit ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def roll6k():
    X, _ = make_swiss_roll(6000, noise=0.05, seed=0)
    return np.asarray(X.compute())


def _updated(X, first, cuts, **kw):
    params = dict(n_components=2, n_neighbors=10, landmarks=64, max_samples=None) | kw
    model = Isomap(**params).fit(X[:first])
    for batch in np.split(X[first:], cuts):
        model.partial_fit(batch)
    return model


def test_partial_fit_in_batches_agrees_with_a_fit_on_all_rows(roll6k):
    full = Isomap(2, n_neighbors=10, landmarks=64, max_samples=None).fit(roll6k)
    inc = _updated(roll6k, 3000, [1000, 2000])
    assert inc.n_samples_seen_ == 6000 and len(inc.reference_rows_) == 6000 and inc.mode_ == "landmark"
    assert procrustes(full.transform(roll6k), inc.transform(roll6k))[2] < 1e-3
    other = _updated(roll6k, 3000, [100, 1700, 1701, 2900])  # another batching, a one-row batch
    assert procrustes(inc.transform(roll6k), other.transform(roll6k))[2] < 1e-4
    np.testing.assert_array_equal(np.sort(inc.reference_keys_), np.sort(other.reference_keys_))
    assert len(inc.drift_history_) == 3 and not any(r["refit_advised"] for r in inc.drift_history_)


def test_an_update_moves_earlier_rows_little(roll6k):
    model = Isomap(2, n_neighbors=10, landmarks=64, max_samples=None).fit(roll6k[:4000])
    before = model.transform(roll6k[:4000])
    model.partial_fit(roll6k[4000:4400])
    after = model.transform(roll6k[:4000])
    # Aligned (no Procrustes here): the coordinates themselves stay put.
    assert np.abs(after - before).max() < 0.02 * np.ptp(before, axis=0).max()


def test_reservoir_keeps_the_sample_a_fit_would_draw(roll6k):
    model = _updated(roll6k, 2000, [1500, 3000], max_samples=1500)
    assert model.mode_ == "sampled" and model.reference_cap_ == 1500
    from bigdr.blockwise.sampling import row_keys

    keys = row_keys(0, 6000, model.seed_)
    landmark_keys = model.reference_keys_[model.landmark_indices_]
    free = np.setdiff1d(keys, landmark_keys)
    expected = np.union1d(landmark_keys, np.sort(free)[:1500])
    np.testing.assert_array_equal(np.sort(model.reference_keys_), expected)
    order = np.argsort(keys)
    rows = order[np.searchsorted(keys[order], model.reference_keys_)]  # the global row of each reference row
    np.testing.assert_array_equal(model.reference_rows_, roll6k[rows])


def test_updated_model_saves_loads_and_goes_on(roll6k, tmp_path):
    model = _updated(roll6k, 3000, [1000])
    model.save(str(tmp_path / "m"))
    loaded = load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.transform(roll6k[:500]), model.transform(roll6k[:500]))
    assert loaded.drift_history_ == model.drift_history_
    model.partial_fit(roll6k[4000:5000])
    loaded.partial_fit(roll6k[4000:5000])
    np.testing.assert_allclose(loaded.transform(roll6k[:500]), model.transform(roll6k[:500]), atol=1e-9)


def test_partial_fit_drift_and_bad_batches(roll6k):
    model = Isomap(2, n_neighbors=10, landmarks=64, max_samples=None).fit(roll6k[:3000])
    model.partial_fit(da.from_array(roll6k[3000:4000], chunks=300))
    assert not model.drift_["refit_advised"]
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(model).items()}
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(roll6k[:10, :2])
    bad = roll6k[4000:4100].copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        model.partial_fit(bad)
    for k, v in state.items():  # nothing changed
        assert np.array_equal(vars(model)[k], v) if isinstance(v, np.ndarray) else vars(model)[k] == v
    shifted = roll6k[4000:4500] + np.array([0.0, 40.0, 0.0])  # beside the roll, outside the trained range
    report = model.measure_drift(shifted)
    assert report["refit_advised"] and report["score"] == "nearest-reference distance"
    assert Isomap(2, n_neighbors=10).partial_fit(roll6k[:1000]).n_samples_seen_ == 1000  # unfitted: fit
    with pytest.raises(ValueError, match="kNN graph"):
        Isomap(2, n_neighbors=None, radius=3.0).fit(roll6k[:1000]).partial_fit(roll6k[1000:1100])
