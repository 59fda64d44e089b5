import dask
import dask.array as da
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
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


@pytest.mark.parametrize("solver", ["covariance", "tsqr"])
def test_unequal_noise_mp_warns_and_mp_whitened_finds_the_spikes(solver):
    from bigdr.datasets import make_spiked_covariance
    from bigdr.exceptions import RankSelectionWarning

    noise = np.linspace(0.5, 1.0, 200)  # noise standard deviation differs between features
    X, _ = make_spiked_covariance(20_000, 200, spikes=(20, 10, 5, 3, 2), noise=noise, seed=5)
    X = da.from_array(X.compute(), chunks=(3000, 200))
    with pytest.warns(RankSelectionWarning, match="mp-whitened"):
        assert PCA("mp", svd_solver=solver).fit(X).n_components_ > 50
    model = PCA("mp-whitened", svd_solver=solver).fit(X)
    assert model.n_components_ == model.n_components_rule_ == 5
    np.testing.assert_allclose(model.feature_noise_variance_, noise**2, rtol=0.05)
    assert not hasattr(model, "mp_edge_")
    assert model.whitened_spectrum_[4] > model.whitened_edge_ > model.whitened_spectrum_[5]


def test_mp_whitened_on_wide_data_uses_the_covariance():
    from bigdr.datasets import make_spiked_covariance

    X, _ = make_spiked_covariance(500, 1000, spikes=(50, 20, 10), seed=2)
    model = PCA("mp-whitened").fit(X)
    assert model.svd_solver_ == "covariance" and model.n_components_ == 3


def test_a_rule_that_finds_nothing_says_zero_and_keeps_one_component():
    from bigdr.datasets import make_spiked_covariance

    X, _ = make_spiked_covariance(20_000, 50, spikes=(), noise=np.linspace(0.5, 1.0, 50), seed=6)
    model = PCA("mp-whitened").fit(X)
    assert model.n_components_rule_ == 0 and model.n_components_ == 1


@pytest.mark.parametrize("solver", ["samples", "randomized"])
def test_mp_whitened_needs_the_covariance(rng, solver):
    with pytest.raises(ValueError, match="svd_solver='covariance' or 'tsqr'"):
        PCA("mp-whitened", svd_solver=solver).fit(correlated(rng, 100, 5))


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
        ({"n_components": 0}, ValueError, "must be between 1 and min"),
        ({"n_components": 1.5}, ValueError, "strictly between"),
        ({"n_components": "mlx"}, ValueError, "'mp'"),
        ({"n_components": [2]}, TypeError, "n_components"),
        ({"n_components": 50}, ValueError, r"must be between 1 and min\(n_samples, n_features\)=6"),
        ({"svd_solver": "lapack"}, ValueError, "svd_solver"),
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


def _spiked(rng, n, p=20, shift=0.0):
    scales = np.r_[[10.0, 5.0, 3.0], np.full(p - 3, 0.3)]
    X = rng.standard_normal((n, p)) * scales
    X[:, -1] += shift  # off the principal subspace: seen by the reconstruction error
    return X


@pytest.mark.parametrize("n_components", [0.9, "mp"])
def test_a_fraction_or_mp_keeps_the_width_of_the_first_fit(n_components):
    # Batches whose spectra differ enough that the rule alone would change the width.
    rng = np.random.default_rng(3)
    model = PCA(n_components)
    widths, rules = [], []
    for i in range(6):
        scales = np.r_[[10.0, 5.0], [8.0 if i else 0.3], np.full(17, 0.3)]  # a third axis grows
        model.partial_fit(rng.standard_normal((400, 20)) * scales)
        widths.append(model.n_components_)
        rules.append(model.n_components_rule_)
    assert len(set(widths)) == 1
    assert model.components_.shape == (widths[0], 20)
    assert len(set(rules)) > 1  # the rule did move; the width did not
    # fit starts afresh: the width follows the rule again.
    assert model.fit(rng.standard_normal((400, 20)) * 5).n_components_ == model.n_components_rule_


def test_drift_flags_shifted_rows_not_in_distribution_ones(rng):
    # Seeded: the threshold comes from a random sample of the training rows, and the bounds below are
    # for 5,000 fresh rows (over 40 seeds the fraction ranged 0.009-0.018; unseeded, one CI run drew 0.022).
    model = PCA(3, random_state=0).fit(_spiked(rng, 20000))
    before = dict(vars(model))
    model.transform(_spiked(rng, 5000))
    assert vars(model).keys() == before.keys()  # transform changes nothing (scikit-learn's contract)
    model.measure_drift(_spiked(rng, 5000))
    assert model.drift_["score"] == "reconstruction error"
    assert 0.005 < model.drift_["fraction"] < 0.02 and not model.drift_["refit_advised"]
    shifted = _spiked(rng, 5000, shift=2.0)
    model.measure_drift(shifted)
    assert model.drift_["fraction"] > 0.9 and model.drift_["refit_advised"]
    # The lazy path measures the same rows the same way.
    lazy = model.measure_drift(da.from_array(shifted, chunks=700))
    assert lazy["beyond"] == model.drift_["beyond"]
    # A small batch with one far row is not flagged (binomial test).
    few = _spiked(rng, 20)
    few[0, -1] += 50
    model.measure_drift(few)
    assert model.drift_["beyond"] >= 1 and not model.drift_["refit_advised"]


def test_drift_threshold_is_the_99th_percentile_of_training_residuals(rng):
    """The threshold is the 99th percentile of Q over a uniform sample of the training rows, drawn by the
    fit's own pass: about 1% of fresh rows from the training distribution lie beyond it, for every solver."""
    X = _spiked(rng, 20000)
    fresh = _spiked(rng, 40000)
    for solver in ("covariance", "tsqr", "randomized"):
        model = PCA(3, svd_solver=solver, random_state=0).fit(X)
        rows = model._drift_rows if solver != "randomized" else None  # kept by mergeable models only
        assert rows is None or rows.shape == (2000, 20)
        model.measure_drift(fresh)
        assert 0.005 < model.drift_["fraction"] < 0.016, solver
        q = ((X - model.mean_) ** 2).sum(1) - (model.transform(X) ** 2).sum(1)
        assert np.mean(q > model.drift_["threshold"]) == pytest.approx(0.01, abs=0.004), solver


def test_drift_threshold_holds_for_rows_of_every_size(rng):
    """Rows of very different sizes (cells of every library size): Q is far from Box's Gaussian
    approximation, which flagged a third of the training rows; the sampled threshold keeps 1%."""
    from bigdr.core.drift import residual_threshold

    def cells(n):
        return _spiked(rng, n) * rng.lognormal(0.0, 0.6, size=(n, 1))

    X = cells(20000)
    for data in (X, sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))):
        model = PCA(3, random_state=0).fit(data)  # seeded: the threshold's sample is random
        fresh = cells(20000)
        fresh = fresh if isinstance(data, np.ndarray) else sp.csr_matrix(np.where(np.abs(fresh) > 0.5, fresh, 0.0))
        assert 0.004 < model.measure_drift(fresh)["fraction"] < 0.018
        box = residual_threshold(model.spectrum_[3:].astype(np.float64))
        q = model._embed_and_score(fresh)[:, -1].compute()
        assert np.mean(q > box) > 0.05  # what the approximation alone said


def test_partial_fit_merges_the_drift_sample_uniformly(rng):
    model = PCA(3, svd_solver="covariance", random_state=0)
    for _ in range(4):
        model.partial_fit(_spiked(rng, 3000))
    index = model._drift_index
    assert len(index) == 2000 and len(np.unique(index)) == 2000
    assert np.histogram(index, bins=4, range=(0, 12000))[0].min() > 400  # every batch represented
    one = PCA(3, svd_solver="covariance").partial_fit(_spiked(rng, 1))  # no components yet: sample kept
    assert len(one._drift_index) == 1 and not hasattr(one, "drift_threshold_")
    assert hasattr(one.partial_fit(_spiked(rng, 500)), "drift_threshold_")


def test_partial_fit_records_drift_history_and_it_survives_save_and_load(rng, tmp_path):
    model = PCA(3, svd_solver="covariance").partial_fit(_spiked(rng, 5000))
    assert not hasattr(model, "drift_history_")  # nothing to compare the first batch with
    model.partial_fit(_spiked(rng, 2000)).partial_fit(_spiked(rng, 2000, shift=3.0))
    flags = [r["refit_advised"] for r in model.drift_history_]
    assert flags == [False, True]
    model.save(str(tmp_path / "m"))
    loaded = bigdr.load(str(tmp_path / "m"))
    assert loaded.drift_history_ == model.drift_history_
    X = _spiked(rng, 500)
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    assert model.fit(_spiked(rng, 1000)) and not hasattr(model, "drift_history_")  # a refit starts afresh


def test_drift_without_discarded_variance_uses_hotelling(rng):
    X = _spiked(rng, 5000, p=4)
    model = PCA(4).fit(X)
    model.measure_drift(_spiked(rng, 4000, p=4))
    assert model.drift_["score"] == "Hotelling T^2" and not model.drift_["refit_advised"]
    model.measure_drift(_spiked(rng, 1000, p=4) * 3)
    assert model.drift_["refit_advised"]


def test_mle_rank_equals_scikit_learns_minka_evidence():
    """Minka's evidence for every rank at once equals scikit-learn's rank-by-rank formula."""
    from sklearn.decomposition._pca import _assess_dimension  # the reference, private to scikit-learn

    from bigdr.core.spectrum import minka_log_evidence

    rng = np.random.default_rng(0)
    for n, p, signal in [(600, 10, [5.0]), (500, 30, [9.0, 6.0, 4.0, 2.0]), (300, 4, [])]:
        X = rng.standard_normal((n, p))
        X[:, : len(signal)] *= signal
        spectrum = np.linalg.svd(X - X.mean(0), compute_uv=False) ** 2 / (n - 1)
        ours = minka_log_evidence(spectrum, n)
        theirs = np.array([_assess_dimension(spectrum, k, n) for k in range(1, p)])
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)
        mle = PCA("mle").fit(X)
        assert mle.n_components_ == SkPCA("mle", svd_solver="full").fit(X).n_components_
    with pytest.raises(ValueError, match="only supported if n_samples >= n_features"):
        PCA("mle", svd_solver="full").fit(rng.standard_normal((5, 8)))
    with pytest.raises(ValueError, match="cannot be a string with svd_solver='randomized'"):
        PCA("mle", svd_solver="randomized").fit(rng.standard_normal((50, 8)))


def test_probabilistic_model_equals_scikit_learns():
    """get_covariance, get_precision, score_samples and score: probabilistic PCA, as scikit-learn's,
    for numpy, dask and CSR rows, also with a float fraction, and with every component kept (no noise)."""
    import scipy.sparse as sp

    X = correlated(np.random.default_rng(3), 800, 12)
    for k in (3, 0.9, None):
        ours, ref = PCA(k).fit(X), SkPCA(k, svd_solver="full").fit(X)
        np.testing.assert_allclose(ours.get_covariance(), ref.get_covariance(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.get_precision(), ref.get_precision(), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(ours.score_samples(X), ref.score_samples(X), rtol=1e-9)
        assert ours.score(X) == pytest.approx(ref.score(X), rel=1e-10)
    lazy = PCA(3).fit(X).score_samples(da.from_array(X, chunks=(100, 12)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), SkPCA(3).fit(X).score_samples(X), rtol=1e-9)
    rows = sp.random(400, 12, density=0.3, random_state=1, format="csr")
    ours, ref = PCA(3, svd_solver="covariance").fit(rows), SkPCA(3, svd_solver="covariance_eigh").fit(rows)
    np.testing.assert_allclose(ours.score_samples(rows), ref.score_samples(rows.toarray()), rtol=1e-8)


def test_scikit_learns_solver_names_and_power_iteration_parameters():
    """'full', 'covariance_eigh' and 'arpack' take the routes that compute what theirs do, with
    scikit-learn's checks; iterated_power replaces n_iter; copy and power_iteration_normalizer are accepted."""
    X = correlated(np.random.default_rng(4), 500, 8)
    ref = SkPCA(3, svd_solver="full").fit(X)
    for name, route in [("full", "tsqr"), ("covariance_eigh", "covariance"), ("arpack", "randomized")]:
        model = PCA(3, svd_solver=name, copy=False, power_iteration_normalizer="LU", random_state=0).fit(X)
        assert model.svd_solver_ == route
        np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-6)
    assert PCA(svd_solver="arpack").fit(X).n_components_ == 7  # None: min(n, p) - 1, as in scikit-learn
    with pytest.raises(ValueError, match=r"strictly less than min\(n_samples, n_features\)=8"):
        PCA(8, svd_solver="arpack").fit(X)
    with pytest.raises(ValueError, match=r"must be between 1 and min\(n_samples, n_features\)=8"):
        PCA(0, svd_solver="randomized").fit(X)
    wide = correlated(np.random.default_rng(5), 2000, 60)  # a Krylov space of 3 blocks of 13 does not fill it
    fixed = PCA(3, svd_solver="randomized", iterated_power=2, tol=0).fit(wide)
    assert fixed.n_iter_ == 3  # the column statistics' pass, then two iterations
    with pytest.raises(ValueError, match="power_iteration_normalizer"):
        PCA(3, power_iteration_normalizer="cholesky").fit(X)
    with pytest.raises(TypeError, match='only support sparse inputs with the "arpack" and "covariance_eigh"'):
        import scipy.sparse as sp

        PCA(3, svd_solver="full").fit(sp.random(100, 8, density=0.5, format="csr", random_state=0))


def test_whitened_model_and_rank_deficient_whitening_follow_scikit_learn():
    """whiten=True: scikit-learn's covariance model and scores, and finite output on rank-deficient data."""
    rng = np.random.default_rng(6)
    X = correlated(rng, 400, 6)
    ours, ref = PCA(3, whiten=True).fit(X), SkPCA(3, whiten=True).fit(X)
    np.testing.assert_allclose(ours.get_covariance(), ref.get_covariance(), rtol=1e-9, atol=1e-12)
    assert ours.score(X) == pytest.approx(ref.score(X), rel=1e-10)
    assert ours.n_samples_ == 400
    low = rng.standard_normal((100, 5)) @ rng.standard_normal((5, 30))
    Y = PCA(None, whiten=True, svd_solver="covariance").fit_transform(low)
    assert np.isfinite(Y).all()
