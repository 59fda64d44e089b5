import dask
import dask.array as da
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import procrustes
from scipy.spatial.distance import cdist
from sklearn.manifold import ClassicalMDS as SkClassicalMDS

import bigdr
import bigdr.manifold.mds
from bigdr import ClassicalMDS, LandmarkMDS, load
from bigdr.blockwise.extension import TASKS_PER_THREAD, _split_rows, extend_blockwise
from bigdr.core.triangulation import double_centre, landmark_mds, triangulate
from bigdr.exceptions import NonEuclideanWarning


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(3)
    return rng.standard_normal((400, 6)) * [6, 4, 2, 1, 0.3, 0.1] + 2.0


def test_features_route_equals_sklearn(points):
    ref = SkClassicalMDS(3).fit(points)
    ours = ClassicalMDS(3).fit(points)
    np.testing.assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(ours.embedding_, ref.embedding_, atol=1e-8)  # signs included
    assert ours.negative_mass_ == 0.0


def test_precomputed_non_euclidean_equals_sklearn_and_reports_negative_mass(points):
    D = cdist(points, points, "cityblock")  # l1 distances are not Euclidean
    ref = SkClassicalMDS(3, metric="precomputed").fit(D)
    ours = ClassicalMDS(3, metric="precomputed").fit(D)
    np.testing.assert_allclose(ours.embedding_, ref.embedding_, atol=1e-8)
    w = np.linalg.eigvalsh(double_centre(D**2))
    expected = np.abs(w[w < 0]).sum() / np.abs(w).sum()
    assert ours.spectrum_complete_ and ours.negative_mass_ == pytest.approx(expected, rel=1e-9)
    assert ours.negative_mass_ > 0.05
    # The same through the lazy pairwise route (distances never stored).
    lazy = ClassicalMDS(3, metric="manhattan").fit(points)
    np.testing.assert_allclose(lazy.embedding_, ours.embedding_, atol=1e-8)


def test_large_precomputed_store_uses_the_randomized_solver(tmp_path, points, monkeypatch):
    D = cdist(points, points)
    store = tmp_path / "d.zarr"
    zarr.create_array(str(store), shape=D.shape, chunks=(128, 128), dtype="f8")[:] = D
    dense = ClassicalMDS(3, metric="precomputed").fit(D)
    monkeypatch.setattr(bigdr.manifold.mds, "DENSE_EIGH_MAX", 100)
    est = ClassicalMDS(3, metric="precomputed", n_iter=6, random_state=1)
    Y = est.fit_transform(str(store))
    assert isinstance(Y, da.Array) and not est.spectrum_complete_
    np.testing.assert_allclose(est.eigenvalues_, dense.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(Y.compute(), dense.embedding_, atol=1e-6)
    assert est.negative_mass_ < 1e-8


def test_too_few_positive_eigenvalues_warns():
    rng = np.random.default_rng(0)
    D = rng.uniform(0.5, 1.0, (30, 30))
    D = (D + D.T) / 2
    np.fill_diagonal(D, 0)
    with pytest.warns(NonEuclideanWarning, match="positive"):
        est = ClassicalMDS(25, metric="precomputed").fit(D)
    assert np.isfinite(est.embedding_).all()
    assert (est.embedding_[:, est.eigenvalues_ <= 0] == 0).all()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda D: D[:, :-1], "square"),
        (lambda D: D + np.triu(np.ones_like(D)) * 0.5 - np.diag(np.diag(np.ones_like(D))) * 0.5, "symmetric"),
        (lambda D: D - 5.0 + np.eye(len(D)) * 5.0, "negative"),
        (lambda D: np.where(np.eye(len(D), dtype=bool), 1.0, D), "diagonal"),
        (lambda D: np.where(np.arange(len(D))[:, None] == 3, np.nan, D), "NaN"),
    ],
)
def test_bad_dissimilarities(points, make, match):
    D = make(cdist(points[:50], points[:50]))
    with pytest.raises(ValueError, match=match):
        ClassicalMDS(2, metric="precomputed").fit(D)


def test_bad_parameters(points):
    with pytest.raises(ValueError, match="n_components"):
        ClassicalMDS(400).fit(points)
    with pytest.raises(ValueError, match="metric"):
        ClassicalMDS(2, metric="nope").fit(points)
    with pytest.raises(ValueError, match="landmarks"):
        LandmarkMDS(3, landmarks=3).fit(points)
    with pytest.raises(TypeError, match="landmarks"):
        LandmarkMDS(3, landmarks=2.5).fit(points)


def test_landmark_count_is_clamped_to_the_rows(points):
    # Regression: LandmarkMDS() (500 landmarks) failed on data of fewer rows.
    est = LandmarkMDS(3, landmarks=1000, random_state=0).fit(points[:300])
    assert est.n_landmarks_ == 300 and len(est.landmarks_) == 300
    assert LandmarkMDS().fit_transform(points[:300]).shape == (300, 2)


def test_seed_used_is_stored_when_random_state_is_none(points):
    # Regression: with random_state=None the seed actually drawn was lost.
    est = LandmarkMDS(2, landmarks=40, random_state=None).fit(points)
    again = LandmarkMDS(2, landmarks=40, random_state=est.seed_).fit(points)
    np.testing.assert_array_equal(est.landmark_indices_, again.landmark_indices_)
    np.testing.assert_allclose(est.embedding_, again.embedding_)


def test_fit_on_a_store_computes_no_embedding(tmp_path, points, monkeypatch):
    # Regression: ClassicalMDS.fit on a store computed the n x k embedding into the driver and dropped it.
    import bigdr.runtime.compute

    store = tmp_path / "x.zarr"
    bigdr.write_zarr(points, store)
    shapes = []
    real = bigdr.runtime.compute.compute

    def spy(*collections, **kwargs):
        out = real(*collections, **kwargs)
        shapes.extend(getattr(o, "shape", ()) for o in out)
        return out

    for module in ("bigdr.decomposition.pca", "bigdr.manifold.mds"):
        monkeypatch.setattr(f"{module}.compute", spy)
    est = ClassicalMDS(2).fit(str(store))
    assert est.eigenvalues_.shape == (2,) and not hasattr(est, "embedding_")
    assert all(len(s) < 1 or s[0] != len(points) for s in shapes), shapes
    Y = est.fit_transform(str(store))
    np.testing.assert_allclose(Y.compute(), ClassicalMDS(2).fit_transform(points), atol=1e-8)


def test_triangulation_gives_landmarks_back():
    rng = np.random.default_rng(1)
    L = rng.standard_normal((40, 5))
    sq = cdist(L, L, "sqeuclidean")
    tri = landmark_mds(sq, 5)
    emb = triangulate(sq, tri)
    # Full rank: the landmark configuration is recovered up to a rigid motion.
    np.testing.assert_allclose(cdist(emb, emb), cdist(L, L), atol=1e-9)


def test_landmark_mds_is_exact_on_low_rank_euclidean_data(points):
    # Rank-3 data: m > 3 landmarks in general position determine every point.
    X = points[:, :3] @ np.random.default_rng(2).standard_normal((3, 8))
    est = LandmarkMDS(3, landmarks=20, random_state=4).fit(X)
    exact = ClassicalMDS(3).fit_transform(X)
    assert procrustes(exact, est.embedding_)[2] < 1e-12
    np.testing.assert_allclose(est.transform(est.landmarks_), est.landmark_embedding_, atol=1e-9)


def test_landmark_mds_with_a_dissimilarity_function(points):
    def l1(A, B):
        return cdist(A, B, "cityblock")

    a = LandmarkMDS(2, landmarks=60, metric=l1, random_state=0).fit_transform(points)
    b = LandmarkMDS(2, landmarks=60, metric="manhattan", random_state=0).fit_transform(points)
    np.testing.assert_allclose(a, b, atol=1e-10)
    assert 0 < LandmarkMDS(2, landmarks=60, metric=l1).fit(points).negative_mass_ < 1


@settings(max_examples=8, deadline=None)
@given(chunk=st.integers(17, 400))
def test_landmark_mds_does_not_depend_on_chunking(points, chunk):
    ref = LandmarkMDS(2, landmarks=50, random_state=7).fit_transform(points)
    got = LandmarkMDS(2, landmarks=50, random_state=7).fit_transform(da.from_array(points, chunks=(chunk, 6)))
    np.testing.assert_allclose(got.compute(), ref, atol=1e-10)


def test_persistence_round_trip(tmp_path, points):
    est = LandmarkMDS(2, landmarks=50, landmark_method="maxmin").fit(points)
    est.save(str(tmp_path / "m"))
    back = load(str(tmp_path / "m"))
    np.testing.assert_array_equal(back.transform(points[:30]), est.transform(points[:30]))
    c = ClassicalMDS(2).fit(points)
    c.save(str(tmp_path / "c"))
    np.testing.assert_array_equal(load(str(tmp_path / "c")).embedding_, c.embedding_)


def test_extension_tasks_hold_one_piece_each_while_threads_need_them(points):
    # Low-dimensional rows are cheap to read and costly to place: a task per
    # 32 MiB of input would put all of 1M 3-D rows in one task.
    est = LandmarkMDS(2, landmarks=50, random_state=0).fit(points)
    ext = est._extension()
    ext.piece_rows = 64
    X = da.from_array(np.tile(points, (3, 1)), chunks=(1200, 6))
    Y = extend_blockwise(X, ext, 6)
    assert max(Y.chunks[0]) == 64 and Y.numblocks[0] == -(-1200 // 64)
    np.testing.assert_allclose(Y.compute()[:400], est.transform(points), atol=1e-10)


def test_extension_tasks_take_whole_pieces_within_their_input_chunk(points):
    # Many rows: a task per piece would flood the scheduler; tasks grow by whole
    # pieces while every thread keeps TASKS_PER_THREAD of them, and never merge chunks.
    est = LandmarkMDS(2, landmarks=50, random_state=0).fit(points)
    ext = est._extension()
    ext.piece_rows = 64
    X = np.tile(points, (20, 1))  # 8,000 rows, one input chunk
    with dask.config.set(num_workers=1):
        Y = extend_blockwise(X, ext, 6)
    rows = 64 * (8000 // (64 * TASKS_PER_THREAD))
    assert Y.chunks[0] == (rows,) * (8000 // rows) + (8000 % rows,) and Y.numblocks[0] >= TASKS_PER_THREAD
    np.testing.assert_allclose(Y.compute()[:400], est.transform(points), atol=1e-10)
    # Input chunks are cut, never merged: no task reads two of them.
    parts = _split_rows(da.from_array(X, chunks=2000), rows).chunks[0]
    assert parts == ((rows,) * (2000 // rows) + (2000 % rows,)) * 4


def test_landmark_mds_partial_fit_keeps_the_landmarks_a_fit_would_draw(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((6000, 5)) * [5, 3, 1, 0.5, 0.2]
    full = bigdr.LandmarkMDS(2, landmarks=200).fit(X)
    inc = bigdr.LandmarkMDS(2, landmarks=200).fit(X[:1000])
    for batch in np.split(X[1000:], [1, 2000, 3500]):
        inc.partial_fit(batch)
    np.testing.assert_array_equal(inc.landmark_indices_, full.landmark_indices_)
    np.testing.assert_array_equal(inc.landmarks_, full.landmarks_)
    assert inc.n_samples_seen_ == 6000 and len(inc.drift_history_) == 4
    assert procrustes(inc.transform(X), full.transform(X))[2] < 1e-10
    # Aligned, not only similar: a batch that changes few landmarks moves earlier rows little.
    before = inc.transform(X[:500])
    inc.partial_fit(rng.standard_normal((600, 5)) * [5, 3, 1, 0.5, 0.2])
    assert np.abs(inc.transform(X[:500]) - before).max() < 0.05 * np.ptp(before)
    inc.save(str(tmp_path / "m"))
    loaded = bigdr.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.transform(X[:50]), inc.transform(X[:50]))
    report = inc.measure_drift(rng.standard_normal((500, 5)) * [5, 3, 1, 0.5, 0.2] + [0, 0, 0, 0, 6])
    assert report["refit_advised"] and report["score"] == "nearest-landmark distance"
    assert not inc.drift_history_[-1]["refit_advised"]
    with pytest.raises(ValueError, match="random"):
        bigdr.LandmarkMDS(2, landmarks=50, landmark_method="maxmin").fit(X[:500]).partial_fit(X[500:600])
