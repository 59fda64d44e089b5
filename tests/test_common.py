"""The common battery: every registered estimator gets these checks for free.

scikit-learn's ``check_estimator`` (with the declared expected failures),
then bigdr's own contract: numpy in -> numpy out; dask or zarr in -> lazy
dask out with no embedding computed by ``fit``; save/load round trips;
``random_state`` reproducibility; chunking invariance; the bad-input set.
"""

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import bigdr
from bigdr.exceptions import NotFittedError
from bigdr.registry import import_all

CLASSES = import_all()

#: Checks an estimator is known to fail, with the reason (also listed in docs/estimators.md).
EXPECTED_FAILURES = {
    "DiffusionMap": {
        "check_dict_unchanged": "transform builds and caches the neighbour index of the reference "
        "rows on first use, so a fit that only embeds its rows never pays for it"
    },
    "SpectralEmbedding": {"check_dict_unchanged": "as DiffusionMap: the Nystrom extension is built on first use"},
    "LocallyLinearEmbedding": {"check_dict_unchanged": "the reference rows' index for transform is built on first use"},
}


#: Settings that keep the battery quick (the methods' own tests run them in full).
QUICK = {
    "PrincipalCurve": {"max_iter": 5},
    "PrincipalManifold": {"max_iter": 3},
    "DensityRidge": {"n_queries": 200},
    "FastICA": {"max_iter": 20},  # the checks' random data need not converge; 200 iterations took 14 s
    "HastieStuetzleCurve": {"max_iter": 5},
}


def checking_instance(cls):
    """The estimator with parameters fit for scikit-learn's tiny check data (10-30 rows)."""
    params = {}
    names = cls().get_params()
    if "n_neighbors" in names:
        params["n_neighbors"] = 5  # the checks fit 10 rows
    if cls.__name__ == "Isomap":
        params["on_disconnected"] = "join"  # two tight blobs: a disconnected 5-NN graph
    if cls.__name__.endswith("RandomProjection"):
        params["n_components"] = 2  # "auto" asks thousands of dimensions for eps=0.1
    return cls(**{**params, **QUICK.get(cls.__name__, {})})


@parametrize_with_checks(
    [checking_instance(c) for c in CLASSES.values()],
    expected_failed_checks=lambda est: EXPECTED_FAILURES.get(type(est).__name__, {}),
)
def test_scikit_learn_contract(estimator, check):
    check(estimator)


# -- bigdr's own battery --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    """600 rows of a noisy swiss roll with two small noise columns (a 2-D manifold in 5-D)."""
    from bigdr.datasets import make_swiss_roll

    X, _ = make_swiss_roll(600, noise=0.05, seed=3)
    rng = np.random.default_rng(0)
    return np.hstack([X.compute(), 0.05 * rng.standard_normal((600, 2))])


def make(cls, **extra):
    params = {"n_components": 2} if "n_components" in cls().get_params() else {}
    est = cls(**{**params, **QUICK.get(cls.__name__, {}), **extra})
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    return est


def width(cls) -> int:
    """Columns of the output on the battery's data (5 features): n_components, or what the method gives."""
    return {"PrincipalCurve": 1, "HastieStuetzleCurve": 1, "DensityRidge": 5}.get(cls.__name__, 2)


names = pytest.mark.parametrize("name", sorted(CLASSES))


@names
def test_numpy_in_numpy_out(name, data):
    est = make(CLASSES[name])
    Y = est.fit_transform(data)
    assert isinstance(Y, np.ndarray) and Y.shape == (600, width(CLASSES[name])) and np.isfinite(Y).all()
    if hasattr(est, "transform"):
        Z = est.transform(data[:50])
        assert isinstance(Z, np.ndarray)
        np.testing.assert_allclose(Z, Y[:50], atol=1e-6 * np.abs(Y).max())


@names
def test_lazy_in_lazy_out_and_fit_computes_no_embedding(name, data, tmp_path, monkeypatch):
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(data, chunks=(150, 5)), store)
    results = []
    real = dask.compute

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        results.extend(getattr(o, "shape", None) for o in out)
        return out

    monkeypatch.setattr(dask, "compute", spy)
    est = make(CLASSES[name]).fit(str(store))
    if name != "DensityRidge":  # its output is as wide as its input, and 600 rows are its density's support
        assert (600, width(CLASSES[name])) not in results, f"fit computed an n x n_components result: {results}"
    monkeypatch.setattr(dask, "compute", real)
    for source in (str(store), da.from_array(data, chunks=(200, 5))):
        Y = est.fit_transform(source)
        assert isinstance(Y, da.Array) and Y.shape == (600, width(CLASSES[name]))
        np.testing.assert_allclose(Y.compute(), make(CLASSES[name]).fit_transform(data), atol=1e-8)


@names
def test_save_load_round_trip(name, data, tmp_path):
    est = make(CLASSES[name])
    Y = est.fit_transform(data)
    est.save(str(tmp_path / "m.zarr"))
    back = bigdr.load(str(tmp_path / "m.zarr"))
    assert type(back) is type(est) and back.get_params() == est.get_params()
    if hasattr(est, "transform"):
        np.testing.assert_array_equal(back.transform(data[:100]), est.transform(data[:100]))
    else:
        np.testing.assert_array_equal(back.embedding_, Y)


@names
def test_random_state_reproducible_and_chunking_invariant(name, data):
    cls = CLASSES[name]
    first = make(cls).fit_transform(data)
    np.testing.assert_array_equal(make(cls).fit_transform(data), first)
    for chunks in ((97, 5), (600, 5), (250, 5)):
        Y = make(cls).fit_transform(da.from_array(data, chunks=chunks)).compute()
        np.testing.assert_allclose(Y, first, atol=1e-8 * max(1.0, np.abs(first).max()))
    if "random_state" in cls().get_params():
        est = make(cls).set_params(random_state=None)
        drawn = est.fit_transform(data)  # the seed drawn for None is kept, so the fit can be repeated
        again = make(cls).set_params(random_state=est.seed_).fit_transform(data)
        np.testing.assert_array_equal(again, drawn)
        # scikit-learn's other form: a RandomState, whose stream gives the seed
        legacy = [make(cls).set_params(random_state=np.random.RandomState(3)).fit_transform(data) for _ in range(2)]
        np.testing.assert_array_equal(legacy[0], legacy[1])


@names
def test_bad_input(name, data):
    est = make(CLASSES[name])
    if hasattr(est, "transform"):
        with pytest.raises(NotFittedError):
            est.transform(data)
    bad_nan = data.copy()
    bad_nan[7, 1] = np.nan
    cases = [
        (bad_nan, ValueError, "NaN"),
        (data[:, 0], ValueError, "2-D"),
        (data.astype(complex), ValueError, "Complex"),
        (np.array([["a", "b"]] * 10), TypeError, "non-numeric"),
    ]
    for X, err, match in cases:
        with pytest.raises(err, match=match):
            make(CLASSES[name]).fit(X)
    est.fit(data)
    if hasattr(est, "transform"):
        with pytest.raises(ValueError, match="features"):
            est.transform(data[:, :3])


@names
def test_scikit_learn_tools(name, data):
    est = make(CLASSES[name])
    out = clone(est).set_output(transform="pandas").fit_transform(data)
    assert isinstance(out, pd.DataFrame) and out.shape == (600, width(CLASSES[name]))
    assert list(out.columns) == list(clone(est).fit(data).get_feature_names_out())
    assert make_pipeline(StandardScaler(), clone(est)).fit_transform(data).shape == (600, width(CLASSES[name]))
    if "random_state" in est.get_params():
        search = GridSearchCV(
            make_pipeline(clone(est)), {f"{name.lower()}__random_state": [0, 1]}, scoring=lambda e, X, y=None: 0.0, cv=2
        ).fit(data)
        assert search.best_params_


# -- dask-ml --------------------------------------------------------------------------------------
def test_dask_ml_pipeline_stays_lazy(data):
    """dask-ml preprocessing and a bigdr estimator in one scikit-learn Pipeline, on a dask array."""
    from dask_ml.preprocessing import StandardScaler as DaskStandardScaler

    Xd = da.from_array(data, chunks=(150, 5))
    pipe = make_pipeline(DaskStandardScaler(), bigdr.PCA(2))
    Y = pipe.fit_transform(Xd)
    assert isinstance(Y, da.Array)
    expected = make_pipeline(StandardScaler(), bigdr.PCA(2)).fit_transform(data)
    np.testing.assert_allclose(Y.compute(), expected, atol=1e-10)
    assert isinstance(pipe.transform(Xd), da.Array)


@pytest.mark.parametrize("name", ["PCA", "KernelPCA", "GaussianRandomProjection", "DensityRidge"])
def test_dask_ml_incremental_drives_partial_fit(name, data):
    """dask_ml.wrappers.Incremental feeds the blocks to partial_fit; the merged model is the one-pass fit."""
    from dask_ml.wrappers import Incremental

    params = {"kernel": "rbf", "method": "fourier", "n_fourier": 200, "gamma": 0.5} if name == "KernelPCA" else {}
    Xd = da.from_array(data, chunks=(150, 5))
    # dask-ml's wrapper builds a scorer at fit; a transformer without score() needs one given.
    # The ridge equals a fit on the rows in the order seen (its query points are drawn by position).
    shuffle = name != "DensityRidge"
    inc = Incremental(make(CLASSES[name], **params), scoring=lambda est, X, y=None: 0.0, shuffle_blocks=shuffle)
    inc.fit(Xd)
    whole = make(CLASSES[name], **params).fit(data)
    np.testing.assert_allclose(np.abs(inc.transform(Xd).compute()), np.abs(whole.transform(data)), atol=1e-8)
    if hasattr(whole, "n_samples_seen_"):
        assert inc.estimator_.n_samples_seen_ == len(data)


# -- xarray ---------------------------------------------------------------------------------------
@names
def test_dataarray_in_dataarray_out(name, data):
    """The sample dimension and its coordinates survive fit_transform and transform; values as numpy."""
    import xarray as xr

    rows = [f"r{i}" for i in range(len(data))]
    A = xr.DataArray(data, dims=("cell", "feature"), coords={"cell": rows, "batch": ("cell", np.arange(600) % 3)})
    Y = make(CLASSES[name]).fit_transform(A)
    assert isinstance(Y, xr.DataArray) and Y.dims == ("cell", "component")
    assert list(Y["cell"].values) == rows and Y["batch"].values.tolist() == (np.arange(600) % 3).tolist()
    np.testing.assert_allclose(Y.values, make(CLASSES[name]).fit_transform(data), atol=1e-8)
    est = make(CLASSES[name]).fit(data)
    if hasattr(est, "transform"):
        lazy = est.transform(A.chunk({"cell": 200}))
        assert isinstance(lazy, xr.DataArray) and isinstance(lazy.data, da.Array)
        np.testing.assert_allclose(lazy.values, est.transform(data), atol=1e-8)
