"""FastICA against scikit-learn, recovery of known sources, the sample phase, chunking, bad input, a cluster run."""

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import PCA as SkPCA
from sklearn.decomposition import FastICA as SkICA

import bigdr
from bigdr.core.ica import amari_distance
from bigdr.exceptions import ConvergenceWarning


def sources(n, seed):
    """Four independent sources: Laplace (super-Gaussian), uniform (sub-Gaussian), Student t5, a bimodal mix."""
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            rng.laplace(size=n),
            rng.uniform(-1, 1, n),
            rng.standard_t(5, n),
            np.sign(rng.standard_normal(n)) * (1 + 0.3 * rng.standard_normal(n)),
        ]
    )


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((6, 4))
    return sources(20_000, 2) @ A.T + 3.0, A


@pytest.mark.filterwarnings("ignore:There are some small singular values")  # scikit-learn's: 6 columns of rank 4
@pytest.mark.parametrize("algorithm", ["parallel", "deflation"])
@pytest.mark.parametrize("fun", ["logcosh", "exp", "cube"])
def test_equals_scikit_learn_with_the_same_whitening_and_start(mixed, algorithm, fun):
    X, _ = mixed
    w0 = np.random.default_rng(3).standard_normal((4, 4))
    ref = SkICA(4, algorithm=algorithm, fun=fun, w_init=w0, whiten_solver="eigh", max_iter=500).fit(X)
    ica = bigdr.FastICA(4, algorithm=algorithm, fun=fun, w_init=w0, whiten_solver="eigh", max_iter=500).fit(
        da.from_array(X, chunks=3000)
    )
    assert ica.n_iter_ == ref.n_iter_ and ica.converged_
    assert amari_distance(ica.components_, ref.mixing_) < 1e-6
    np.testing.assert_allclose(ica.components_, ref.components_, atol=1e-9)
    np.testing.assert_allclose(ica.mixing_, ref.mixing_, atol=1e-9)
    np.testing.assert_allclose(ica.transform(X), ref.transform(X), atol=1e-8)
    # one pass to whiten, then one per iteration (of each unit for deflation, n_iter_ is the most of any)
    if algorithm == "parallel":
        assert ica.n_passes_ == 1 + ica.n_iter_
    else:
        assert 1 + ica.n_iter_ < ica.n_passes_ <= 1 + 4 * ica.n_iter_


def test_recovers_known_sources_on_100k_rows():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((5, 4))
    X = sources(100_000, 8) @ A.T
    ica = bigdr.FastICA(4, random_state=0).fit(da.from_array(X, chunks=20_000))
    assert amari_distance(ica.components_, A) < 0.05
    S = ica.transform(X)
    np.testing.assert_allclose(S.std(axis=0), 1.0, rtol=1e-8)  # whiten="unit-variance"
    np.testing.assert_allclose(ica.inverse_transform(S), X, atol=1e-8)  # 4 sources span the 5 columns' signal


def test_a_sample_phase_then_full_passes_reaches_the_same_unmixing(mixed):
    X, A = mixed
    full = bigdr.FastICA(4, random_state=0, tol=1e-6).fit(X)
    staged = bigdr.FastICA(4, random_state=0, tol=1e-6, sample_size=3000).fit(X)
    assert staged.converged_ and staged.n_passes_ < full.n_passes_
    assert amari_distance(staged.components_, full.mixing_) < 1e-4


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(500, 8000), min_size=1, max_size=5))
def test_any_chunking_gives_the_same_unmixing(mixed, sizes):
    X, _ = mixed
    cuts = sorted({c for c in np.cumsum(sizes) if c < len(X)})
    chunks = tuple(np.diff([0, *cuts, len(X)]).tolist())
    whole = bigdr.FastICA(4, random_state=0).fit(X)
    ica = bigdr.FastICA(4, random_state=0).fit(da.from_array(X, chunks=(chunks, X.shape[1])))
    np.testing.assert_allclose(ica.components_, whole.components_, atol=1e-9)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": 7}, "n_components=7 must be at most"),
        ({"whiten": True}, "whiten must be"),
        ({"whiten_solver": "qr"}, "whiten_solver"),
        ({"fun": "tanh"}, "fun must be one of"),
        ({"algorithm": "fixed"}, "algorithm"),
        ({"fun_args": {"alpha": 3.0}}, "alpha"),
        ({"w_init": np.eye(3)}, "w_init has shape"),
        ({"tol": -1.0}, "tol"),
    ],
)
def test_bad_input(mixed, params, match):
    X, _ = mixed
    with pytest.raises(ValueError, match=match):
        bigdr.FastICA(**{"n_components": 4, **params}).fit(X)


def test_a_constant_column_and_non_convergence_say_what_to_change(mixed):
    X, _ = mixed
    Xc = X.copy()
    Xc[:, 2] = 1.0
    with pytest.raises(ValueError, match=r"Column\(s\) \[2\] are constant"):
        bigdr.FastICA(4).fit(Xc)
    with pytest.warns(ConvergenceWarning, match="did not converge. Consider increasing tolerance"):
        ica = bigdr.FastICA(4, max_iter=1, random_state=0).fit(X)
    assert not ica.converged_ and ica.convergence_ > ica.tol


def test_on_a_real_cluster(cluster_client, mixed, tmp_path):
    X, _ = mixed
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(X, chunks=(4000, 6)), store)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        ica = bigdr.FastICA(4, random_state=0).fit(str(store))
    np.testing.assert_allclose(ica.components_, bigdr.FastICA(4, random_state=0).fit(X).components_, atol=1e-9)


def test_scikit_learns_whiten_solvers_callable_contrast_and_unwhitened_input(mixed):
    """whiten_solver='svd' (the R factor of a one-pass TSQR) equals scikit-learn's default SVD whitening;
    a callable ``fun`` equals the named contrast it computes; whiten=False takes white rows as they are;
    float32 stays float32."""
    X, _ = mixed
    full_rank = X[:, :4] + 0.1 * np.random.default_rng(5).standard_normal((len(X), 4))
    w0 = np.random.default_rng(3).standard_normal((4, 4))
    ref = SkICA(4, w_init=w0, max_iter=500).fit(full_rank)  # whiten_solver="svd", scikit-learn's default
    ica = bigdr.FastICA(4, w_init=w0, max_iter=500).fit(da.from_array(full_rank, chunks=3000))
    np.testing.assert_allclose(ica.components_, ref.components_, atol=1e-8)
    with pytest.warns(UserWarning, match="There are some small singular values"):  # 6 columns of rank 4
        bigdr.FastICA(4, whiten_solver="eigh", random_state=0).fit(X)

    def cube(u):
        return u**3, (3 * u**2).mean(axis=-1)

    named = bigdr.FastICA(4, fun="cube", w_init=w0, max_iter=500).fit(full_rank)
    given = bigdr.FastICA(4, fun=cube, w_init=w0, max_iter=500).fit(da.from_array(full_rank, chunks=2500))
    np.testing.assert_allclose(given.components_, named.components_, atol=1e-9)
    white = SkPCA(4, whiten=True).fit_transform(full_rank)
    ref = SkICA(whiten=False, w_init=w0, max_iter=500).fit(white)
    with pytest.warns(UserWarning, match="Ignoring n_components with whiten=False"):
        ica = bigdr.FastICA(3, whiten=False, w_init=w0, max_iter=500).fit(white)
    assert not hasattr(ica, "whitening_") and ica.n_passes_ == ica.n_iter_
    np.testing.assert_allclose(ica.components_, ref.components_, atol=1e-8)
    np.testing.assert_allclose(ica.transform(white), ref.transform(white), atol=1e-8)
    small = bigdr.FastICA(4, random_state=0, max_iter=500).fit(full_rank.astype(np.float32))
    assert small.components_.dtype == small.mixing_.dtype == small.mean_.dtype == np.float32
    assert small.transform(full_rank.astype(np.float32)).dtype == np.float32


def test_an_int_seed_starts_where_scikit_learn_starts_and_a_bad_callable_is_refused(mixed):
    X, _ = mixed
    full_rank = X[:, :4] + 0.1 * np.random.default_rng(5).standard_normal((len(X), 4))
    ours = bigdr.FastICA(4, random_state=7, max_iter=500).fit(full_rank)
    ref = SkICA(4, random_state=7, max_iter=500).fit(full_rank)
    np.testing.assert_allclose(ours.transform(full_rank), ref.transform(full_rank), atol=1e-7)
    with pytest.raises(ValueError, match="must return a tuple"):
        bigdr.FastICA(4, fun=np.tanh).fit(full_rank)
    low = np.random.default_rng(1).standard_normal((10, 2)) @ np.random.default_rng(2).standard_normal((2, 10))
    with pytest.warns(UserWarning, match="small singular values"):
        assert np.isfinite(bigdr.FastICA(whiten_solver="eigh", random_state=0, max_iter=5).fit(low).mixing_).all()
