import dask
import dask.array as da
import numpy as np
import pytest
import scipy.linalg
import zarr
from conftest import correlated
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import PCA as SkPCA

import bigdr
from bigdr import PCA
from bigdr.exceptions import NotFittedError

EXACT = ["covariance", "tsqr", "samples"]


def _assert_matches_sklearn(model, ref, X, angle_tol=1e-8, rtol=1e-10):
    angles = scipy.linalg.subspace_angles(model.components_.T, ref.components_.T)
    assert angles.max() < angle_tol
    # Same sign convention: the components agree entry by entry, not only as subspaces.
    np.testing.assert_allclose(model.components_, ref.components_, atol=1e-7)
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=rtol)
    np.testing.assert_allclose(model.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=rtol)
    np.testing.assert_allclose(model.singular_values_, ref.singular_values_, rtol=rtol)
    np.testing.assert_allclose(model.mean_, ref.mean_, rtol=1e-12)
    np.testing.assert_allclose(model.noise_variance_, ref.noise_variance_, rtol=1e-9)
    np.testing.assert_allclose(model.transform(X), ref.transform(X), atol=1e-7)


@pytest.mark.parametrize("solver", EXACT)
@pytest.mark.parametrize("k", [1, 4, 12])
def test_exact_solvers_match_sklearn(rng, solver, k):
    X = correlated(rng, 800, 12)
    model = PCA(k, svd_solver=solver).fit(X)
    ref = SkPCA(k, svd_solver="full").fit(X)
    _assert_matches_sklearn(model, ref, X)
    assert model.n_components_ == ref.n_components_ == k
    np.testing.assert_allclose(
        model.inverse_transform(model.transform(X)), ref.inverse_transform(ref.transform(X)), atol=1e-8
    )


def test_n_components_none_keeps_min_n_p(rng):
    X = correlated(rng, 50, 8)
    assert PCA().fit(X).n_components_ == 8
    assert PCA(svd_solver="covariance").fit(X[:5]).n_components_ == 5


@pytest.mark.parametrize("fraction", [0.5, 0.8, 0.95, 0.999])
def test_fraction_selects_the_same_k_as_sklearn(rng, fraction):
    X = correlated(rng, 2000, 15)
    assert PCA(fraction).fit(X).n_components_ == SkPCA(fraction, svd_solver="full").fit(X).n_components_


def test_wide_data_samples_route_matches_sklearn(rng):
    X = correlated(rng, 300, 40) @ rng.standard_normal((40, 900))  # n < p, rank 40
    model = PCA(10).fit(X)
    assert model.svd_solver_ == "samples"
    ref = SkPCA(10, svd_solver="full").fit(X)
    _assert_matches_sklearn(model, ref, X, rtol=1e-9)


def test_randomized_on_column_chunked_wide_data(rng):
    n, p = 600, 3000
    low = rng.standard_normal((n, 8)) * np.geomspace(50, 5, 8)
    X = low @ rng.standard_normal((8, p)) / np.sqrt(p) + 0.01 * rng.standard_normal((n, p)) + 2.0
    Xd = da.from_array(X, chunks=(200, 1000))
    model = PCA(5, svd_solver="randomized", random_state=0).fit(Xd)
    ref = SkPCA(5, svd_solver="full").fit(X)
    assert scipy.linalg.subspace_angles(model.components_.T, ref.components_.T).max() < 1e-8
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(model.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(model.noise_variance_, ref.noise_variance_, rtol=1e-8)
    # Same answer whatever the chunking: the test matrix comes from the seed alone.
    again = PCA(5, svd_solver="randomized", random_state=0).fit(da.from_array(X, chunks=(250, 1500)))
    np.testing.assert_allclose(again.components_, model.components_, atol=1e-10)


def test_randomized_refuses_fraction(rng):
    with pytest.raises(ValueError, match="int n_components"):
        PCA(0.9, svd_solver="randomized").fit(correlated(rng, 100, 5))


@settings(max_examples=15, deadline=None)
@given(chunk=st.integers(3, 600), solver=st.sampled_from(["covariance", "tsqr"]))
def test_chunking_does_not_change_the_fit(chunk, solver):
    X = correlated(np.random.default_rng(7), 600, 7)
    ref = PCA(3, svd_solver=solver).fit(X)
    model = PCA(3, svd_solver=solver).fit(da.from_array(X, chunks=(chunk, 7)))
    np.testing.assert_allclose(model.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-11)


@pytest.mark.parametrize("solver", ["covariance", "tsqr"])
def test_partial_fit_over_batches_equals_fit(rng, solver):
    X = correlated(rng, 2500, 9)
    inc = PCA(4, svd_solver=solver)
    for batch in np.array_split(X, [1, 700, 701, 1900]):  # includes a single-row batch
        inc.partial_fit(batch)
    full = PCA(4, svd_solver=solver).fit(X)
    assert inc.n_samples_seen_ == 2500
    np.testing.assert_allclose(inc.components_, full.components_, atol=1e-10)
    np.testing.assert_allclose(inc.explained_variance_, full.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(inc.mean_, full.mean_, rtol=1e-13)


def test_partial_fit_errors(rng):
    X = correlated(rng, 100, 5)
    with pytest.raises(ValueError, match="features"):
        PCA(2).partial_fit(X).partial_fit(X[:, :4])
    with pytest.raises(ValueError, match="cannot be merged"):
        PCA(2, svd_solver="covariance").fit(X).set_params(svd_solver="tsqr").partial_fit(X)
    with pytest.raises(ValueError, match="mergeable"):
        PCA(2, svd_solver="randomized").partial_fit(X)


def test_whiten_matches_sklearn(rng):
    X = correlated(rng, 1000, 6)
    ref = SkPCA(3, whiten=True, svd_solver="full").fit(X)
    model = PCA(3, whiten=True).fit(X)
    np.testing.assert_allclose(model.transform(X), ref.transform(X), atol=1e-8)
    np.testing.assert_allclose(np.var(model.transform(X), axis=0, ddof=1), 1, rtol=1e-10)
    np.testing.assert_allclose(
        model.inverse_transform(model.transform(X)), ref.inverse_transform(ref.transform(X)), atol=1e-8
    )


def test_float32_stays_float32(rng):
    X = correlated(rng, 2000, 6).astype(np.float32)
    model = PCA(2).fit(X)
    assert model.components_.dtype == np.float32 and model.transform(X).dtype == np.float32
    ref = PCA(2).fit(X.astype(np.float64))
    np.testing.assert_allclose(model.components_, ref.components_, atol=1e-4)


def test_sign_convention_largest_entry_positive(rng):
    model = PCA(5).fit(correlated(rng, 500, 8))
    rows = np.arange(5)
    assert (model.components_[rows, np.argmax(np.abs(model.components_), axis=1)] > 0).all()


def test_mp_finds_the_planted_spikes():
    from bigdr.datasets import make_spiked_covariance

    X, _ = make_spiked_covariance(20_000, 200, spikes=(8.0, 3.0, 0.05), seed=4)  # 0.05 < sqrt(0.01)
    model = PCA("mp").fit(X)
    assert model.n_components_ == 2
    assert model.mp_noise_variance_ == pytest.approx(1, rel=0.02)
    np.testing.assert_allclose(model.explained_variance_, [9, 4], rtol=0.05)


def test_dask_in_gives_lazy_dask_out_and_numpy_gives_numpy(rng):
    X = correlated(rng, 400, 5)
    model = PCA(2).fit(X)
    out = model.transform(da.from_array(X, chunks=100))
    assert isinstance(out, da.Array) and out.shape == (400, 2)
    assert isinstance(model.transform(X), np.ndarray)
    assert isinstance(model.inverse_transform(out), da.Array)


def test_zarr_store_on_disk_fit_transform_write(tmp_path, rng):
    X = correlated(rng, 5000, 10)
    store = tmp_path / "x.zarr"
    zarr.create_array(str(store), shape=X.shape, chunks=(512, 10), dtype="f8")[:] = X
    model = PCA(3).fit(str(store))
    Y = model.transform(str(store))
    bigdr.write_zarr(Y, tmp_path / "y.zarr")
    ref = SkPCA(3, svd_solver="full").fit(X)
    np.testing.assert_allclose(zarr.open(str(tmp_path / "y.zarr"), mode="r")[:], ref.transform(X), atol=1e-8)


def test_distributed_cluster_gives_the_same_fit(cluster_client, rng, tmp_path):
    X = correlated(rng, 20_000, 12)
    store = tmp_path / "x.zarr"
    zarr.create_array(str(store), shape=X.shape, chunks=(2000, 12), dtype="f8")[:] = X
    local = PCA(4).fit(str(store))
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = PCA(4).fit(str(store))
        Y = remote.transform(str(store)).compute()
        rand = PCA(4, svd_solver="randomized", random_state=1).fit(str(store))
    assert len(cluster_client.scheduler_info()["workers"]) == 2
    np.testing.assert_allclose(remote.components_, local.components_, atol=1e-12)
    np.testing.assert_allclose(remote.explained_variance_, local.explained_variance_, rtol=1e-12)
    np.testing.assert_allclose(Y, local.transform(X), atol=1e-9)
    np.testing.assert_allclose(rand.explained_variance_, local.explained_variance_, rtol=1e-8)


def test_tsqr_keeps_small_components_the_covariance_solver_loses():
    rng = np.random.default_rng(0)
    n, p = 20_000, 12
    s = np.geomspace(1, 1e-7, p)
    G = rng.standard_normal((n, p))
    U, _ = np.linalg.qr(G - G.mean(0))  # orthonormal and orthogonal to the ones vector
    V, _ = np.linalg.qr(rng.standard_normal((p, p)))
    X = (U * s) @ V.T + 5.0
    errors = {}
    for solver in ("covariance", "tsqr"):
        m = PCA(svd_solver=solver).fit(da.from_array(X, chunks=(3000, p)))
        errors[solver] = np.abs(m.singular_values_ / s - 1)
    assert errors["tsqr"].max() < 1e-6
    assert errors["covariance"][-1] > 100 * errors["tsqr"][-1]


@pytest.mark.parametrize(
    "params, exc, match",
    [
        ({"n_components": 0}, ValueError, "at least 1"),
        ({"n_components": 1.5}, ValueError, "strictly between"),
        ({"n_components": "mle"}, ValueError, "'mp'"),
        ({"n_components": [2]}, TypeError, "n_components"),
        ({"n_components": 50}, ValueError, "at most"),
        ({"svd_solver": "arpack"}, ValueError, "svd_solver"),
        ({"n_iter": -1}, ValueError, "n_iter"),
        ({"whiten": "yes"}, TypeError, "whiten"),
    ],
)
def test_bad_parameters(rng, params, exc, match):
    with pytest.raises(exc, match=match):
        PCA(**params).fit(correlated(rng, 30, 6))


def test_bad_use(rng):
    X = correlated(rng, 30, 6)
    with pytest.raises(NotFittedError, match="not fitted"):
        PCA(2).transform(X)
    with pytest.raises(ValueError, match="features"):
        PCA(2).fit(X).transform(X[:, :5])
    X[3, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PCA(2).fit(X)
    with pytest.raises(ValueError, match="Invalid parameter"):
        PCA().set_params(n_comp=3)


def test_params_roundtrip_and_repr():
    model = PCA(3, whiten=True)
    assert model.get_params()["n_components"] == 3
    assert PCA(**model.get_params()).get_params() == model.get_params()
    assert repr(model) == "PCA(n_components=3, whiten=True)"
