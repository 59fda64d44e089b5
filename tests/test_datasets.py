import dask.array as da
import numpy as np
import pytest
import zarr
from sklearn.datasets import make_swiss_roll as sk_swiss_roll

from bigdr import as_array
from bigdr.datasets import (
    BLOCK_ROWS,
    generate,
    make_blobs,
    make_s_curve,
    make_spiked_covariance,
    make_swiss_roll,
    spike_directions,
)


def test_same_seed_same_data_whatever_the_chunking(tmp_path):
    n = BLOCK_ROWS + 1234
    X, c = make_swiss_roll(n, noise=0.1, seed=5)
    generate("swiss-roll", tmp_path / "a.zarr", n, seed=5, noise=0.1, chunk_rows=10_000)
    generate("swiss-roll", tmp_path / "b.zarr", n, seed=5, noise=0.1, chunk_rows=50_001)
    a, b = as_array(str(tmp_path / "a.zarr")).compute(), as_array(str(tmp_path / "b.zarr")).compute()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, X.compute())
    np.testing.assert_array_equal(zarr.open(str(tmp_path / "a.zarr"), mode="r")["coords"][:], c.compute())
    assert not np.array_equal(a, make_swiss_roll(n, noise=0.1, seed=6)[0].compute())


def test_swiss_roll_geometry_matches_sklearn_parametrisation():
    X, coords = (a.compute() for a in make_swiss_roll(5000, seed=1))
    t, h = coords.T
    np.testing.assert_allclose(X[:, 0], t * np.cos(t))
    np.testing.assert_allclose(X[:, 2], t * np.sin(t))
    np.testing.assert_allclose(X[:, 1], h)
    Xs, ts = sk_swiss_roll(5000, random_state=0)
    assert abs(t.min() - ts.min()) < 0.05 and abs(t.max() - ts.max()) < 0.05


def test_s_curve_and_blobs_shapes():
    X, c = make_s_curve(1000, seed=2)
    assert X.shape == (1000, 3) and c.shape == (1000, 2)
    X, labels = make_blobs(3000, 4, centers=3, cluster_std=0.1, seed=3)
    assert set(np.unique(labels.compute())) == {0, 1, 2}


def test_spiked_covariance_has_the_stated_covariance():
    X, _ = make_spiked_covariance(200_000, 20, spikes=(9.0, 4.0), noise=0.5, seed=1)
    V = spike_directions(20, 2, 1)
    expected = 0.25 * np.eye(20) + V.T @ np.diag([9.0, 4.0]) @ V
    np.testing.assert_allclose(np.cov(X.compute().T), expected, atol=0.05)


def test_float32_and_laziness():
    X, _ = make_spiked_covariance(10_000_000, 100, seed=0, dtype=np.float32)  # 4 GB, never built
    assert isinstance(X, da.Array) and X.dtype == np.float32 and X.shape == (10_000_000, 100)
    assert X[-3:].compute().shape == (3, 100)


@pytest.mark.parametrize("kw, match", [({"n_samples": 1}, "n_samples"), ({"n_samples": 10, "seed": -1}, "seed")])
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        make_swiss_roll(**kw)


def test_unknown_kind(tmp_path):
    with pytest.raises(ValueError, match="Unknown data set"):
        generate("moons", tmp_path / "x.zarr", 10)


def test_filaments_lie_on_their_segments_with_clumps_and_a_background():
    from bigdr.datasets import filament_segments, make_filaments

    X, coords = make_filaments(20_000, noise=0.01, seed=3)
    X, coords = X.compute(), coords.compute()
    segments = filament_segments(16, 3, 1.0, 3)
    label, t = coords[:, 0].astype(int), coords[:, 1]
    on = label >= 0
    a, b = segments[label[on], 0], segments[label[on], 1]
    expected = a + t[on, None] * (b - a)
    assert (X[on] - expected).std() == pytest.approx(0.01, rel=0.05)  # the filament noise
    assert np.mean(label == -1) == pytest.approx(0.15, abs=0.01) and np.mean(label == -2) == pytest.approx(
        0.15, abs=0.01
    )
    assert np.isnan(t[~on]).all() and ((X[label == -2] >= 0) & (X[label == -2] <= 1)).all()
    assert len(segments) >= 16 and (np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1) > 0).all()


def test_negative_binomial_counts_have_the_moments_asked_for():
    from bigdr.datasets import _nb_counts

    mu = np.full((4000, 200), 0.5)
    mu[:, 100:] = 3.0
    C = _nb_counts(np.random.default_rng(0), mu, 2.0).toarray()
    for cols, m in ((slice(0, 100), 0.5), (slice(100, 200), 3.0)):
        x = C[:, cols]
        assert abs(x.mean() - m) < 0.02 * m
        assert abs(x.var() - (m + m * m / 2.0)) < 0.05 * (m + m * m / 2.0)  # NB: mu + mu^2 / r
        assert abs((x == 0).mean() - (1 + m / 2.0) ** -2.0) < 0.01


@pytest.mark.parametrize("make, width, density", [("cells", 600, 0.05), ("documents", 3000, 0.01)])
def test_sparse_generators_are_sparse_reproducible_and_dense_free(make, width, density):
    import scipy.sparse as sp

    from bigdr.datasets import SPARSE_BLOCK_ROWS, make_cells, make_documents

    fn = make_cells if make == "cells" else make_documents
    X, coords = fn(SPARSE_BLOCK_ROWS + 500, width, density=density, seed=3)
    assert X.chunks[0] == (SPARSE_BLOCK_ROWS, 500) and coords.shape == (X.shape[0], 2)
    A, B = X.compute(), X.compute()
    assert sp.issparse(A) and (A != B).nnz == 0  # the same data each time it is computed
    assert abs(A.nnz / np.prod(A.shape) - density) < 0.2 * density
    assert A.dtype == np.float32 and np.isfinite(A.data).all() and (A.data > 0).all()
    if make == "documents":  # TF-IDF rows of unit norm
        np.testing.assert_allclose(np.sqrt(A.multiply(A).sum(axis=1)).A1, 1.0, rtol=1e-5)
    other, _ = fn(SPARSE_BLOCK_ROWS + 500, width, density=density, seed=4)
    assert (other.blocks[0].compute() != A[:SPARSE_BLOCK_ROWS]).nnz > 0
