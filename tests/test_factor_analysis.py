"""Factor analysis against scikit-learn, merges, chunking, bad input, a cluster run."""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import FactorAnalysis as SkFA

import bigdr
from bigdr.core.factor import rotate
from bigdr.exceptions import ConvergenceWarning

K = 3


@pytest.fixture(scope="module")
def data():
    """3,000 rows of 3 factors in 12 columns, noise standard deviation 0.3-1.0 by column, mean 5."""
    rng = np.random.default_rng(0)
    n, p = 3000, 12
    loadings = rng.standard_normal((K, p))
    return rng.standard_normal((n, K)) @ loadings + rng.uniform(0.3, 1.0, p) * rng.standard_normal((n, p)) + 5.0


def _signed(A, ref):
    """``A``'s rows with the signs that best match ``ref``'s."""
    return A * np.sign(np.sum(A * ref, axis=1))[:, None]


@pytest.mark.parametrize("rotation", [None, "varimax", "quartimax"])
def test_equals_scikit_learn(data, rotation):
    ref = SkFA(K, svd_method="lapack", rotation=rotation).fit(data)
    fa = bigdr.FactorAnalysis(K, rotation=rotation).fit(data)
    assert fa.n_iter_ == ref.n_iter_ and fa.converged_
    # the subspace of the loadings, then each loading up to sign (rotations equal)
    assert np.rad2deg(scipy.linalg.subspace_angles(ref.components_.T, fa.components_.T).max()) < 1e-6
    np.testing.assert_allclose(_signed(fa.components_, ref.components_), ref.components_, atol=1e-9)
    np.testing.assert_allclose(fa.noise_variance_, ref.noise_variance_, rtol=1e-6)
    np.testing.assert_allclose(fa.loglike_, ref.loglike_, rtol=1e-6)
    np.testing.assert_allclose(fa.get_covariance(), ref.get_covariance(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fa.get_precision(), ref.get_precision(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fa.score_samples(data), ref.score_samples(data), rtol=1e-9)
    assert fa.score(data) == pytest.approx(ref.score(data), rel=1e-10)
    Y, expected = fa.transform(data), ref.transform(data)
    np.testing.assert_allclose(Y * np.sign(np.sum(Y * expected, axis=0)), expected, atol=1e-8)


def test_rotation_maximises_the_varimax_criterion(data):
    W = bigdr.FactorAnalysis(K).fit(data).components_

    def varimax(L):
        sq = L.T**2
        return float(np.sum((sq - sq.mean(axis=0)) ** 2))

    rotated = rotate(W, "varimax")
    np.testing.assert_allclose(rotated.T @ rotated, W.T @ W, atol=1e-10)  # the model covariance is unchanged
    angles = np.linspace(0, np.pi, 7)[1:-1]
    for a in angles:  # no plane rotation of the result improves the criterion
        G = np.eye(K)
        G[[0, 1], [0, 1]] = np.cos(a)
        G[0, 1], G[1, 0] = -np.sin(a), np.sin(a)
        assert varimax(G @ rotated) <= varimax(rotated) + 1e-9


def test_partial_fit_equals_fit(data):
    whole = bigdr.FactorAnalysis(K).fit(data)
    parts = bigdr.FactorAnalysis(K)
    for batch in np.array_split(data, [700, 2100]):
        parts.partial_fit(batch)
    assert parts.n_samples_seen_ == len(data)
    np.testing.assert_allclose(parts.components_, whole.components_, atol=1e-10)
    np.testing.assert_allclose(parts.noise_variance_, whole.noise_variance_, rtol=1e-10)
    with pytest.raises(ValueError, match="features"):
        parts.partial_fit(data[:, :5])


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 1500), min_size=1, max_size=6))
def test_any_chunking_gives_the_same_model(data, sizes):
    cuts = sorted({c for c in np.cumsum(sizes) if c < len(data)})
    sizes = np.diff([0, *cuts, len(data)]).tolist()
    whole = bigdr.FactorAnalysis(K).fit(data)
    fa = bigdr.FactorAnalysis(K).fit(da.from_array(data, chunks=(tuple(sizes), data.shape[1])))
    np.testing.assert_allclose(fa.components_, whole.components_, atol=1e-9)
    np.testing.assert_allclose(fa.loglike_, whole.loglike_, rtol=1e-10)


def test_reads_the_data_once_and_transforms_lazily(data, tmp_path, monkeypatch):
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(data, chunks=(500, 12)), store)
    calls = []
    real = dask.compute

    def spy(*args, **kwargs):
        calls.append(len(args))
        return real(*args, **kwargs)

    monkeypatch.setattr(dask, "compute", spy)
    fa = bigdr.FactorAnalysis(K).fit(str(store))
    assert len(calls) == 1  # one pass, whatever the number of iterations
    monkeypatch.setattr(dask, "compute", real)
    Y = fa.transform(da.from_array(data, chunks=500))
    assert isinstance(Y, da.Array)
    np.testing.assert_allclose(Y.compute(), fa.transform(data), atol=1e-10)
    assert isinstance(fa.score_samples(da.from_array(data, chunks=500)), da.Array)


@pytest.mark.parametrize(
    "params, X, match",
    [
        ({"n_components": 13}, None, "n_components=13 must be at most n_features = 12"),
        ({"rotation": "oblimin"}, None, "rotation"),
        ({"tol": -1.0}, None, "tol"),
        ({}, "constant", r"Column\(s\) \[4\] are constant"),
    ],
)
def test_bad_input(data, params, X, match):
    if X == "constant":
        X = data.copy()
        X[:, 4] = 2.5
    with pytest.raises(ValueError, match=match):
        bigdr.FactorAnalysis(**{"n_components": K, **params}).fit(data if X is None else X)


def test_non_convergence_says_what_to_change(data):
    with pytest.warns(ConvergenceWarning, match="raise max_iter or tol"):
        fa = bigdr.FactorAnalysis(K, max_iter=2).fit(data)
    assert not fa.converged_ and fa.n_iter_ == 2
    import sklearn.exceptions

    with pytest.warns(sklearn.exceptions.ConvergenceWarning):  # scikit-learn's class catches bigdr's
        bigdr.FactorAnalysis(K, max_iter=2).fit(data)


def test_on_a_real_cluster(cluster_client, data, tmp_path):
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(data, chunks=(400, 12)), store)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        fa = bigdr.FactorAnalysis(K, rotation="varimax").fit(str(store))
    ref = bigdr.FactorAnalysis(K, rotation="varimax").fit(data)
    np.testing.assert_allclose(fa.components_, ref.components_, atol=1e-9)


def test_scikit_learns_randomized_svd_method_and_starting_noise(data):
    """svd_method='randomized' (iterated_power subspace iterations per step) reaches scikit-learn's fit;
    noise_variance_init starts the iterations; copy and random_state are accepted."""
    ref = SkFA(K, svd_method="randomized", random_state=0).fit(data)
    fa = bigdr.FactorAnalysis(K, svd_method="randomized", iterated_power=3, random_state=0, copy=False).fit(data)
    assert fa.converged_ and fa.whitened_spectrum_.shape == (K,)
    np.testing.assert_allclose(fa.noise_variance_, ref.noise_variance_, rtol=1e-4)
    assert np.rad2deg(scipy.linalg.subspace_angles(ref.components_.T, fa.components_.T).max()) < 1e-2
    init = np.full(data.shape[1], 0.5)
    ref = SkFA(K, svd_method="lapack", noise_variance_init=init).fit(data)
    fa = bigdr.FactorAnalysis(K, noise_variance_init=init).fit(data)
    assert fa.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(fa.loglike_, ref.loglike_, rtol=1e-6)
    with pytest.raises(ValueError, match="noise_variance_init must hold 12 positive"):
        bigdr.FactorAnalysis(K, noise_variance_init=np.ones(3)).fit(data)
    with pytest.raises(ValueError, match="svd_method"):
        bigdr.FactorAnalysis(K, svd_method="arpack").fit(data)
