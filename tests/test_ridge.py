"""Density ridges by SCMS against a dense textbook implementation, known ridges, approximations, a cluster run."""

import dask.array as da
import numpy as np
import pytest

from bigdr.curves.density_ridge import DensityRidge


def textbook_scms(X, queries, h, dim, tol=1e-8, max_iter=500):
    """SCMS one point at a time with the density's gradient and Hessian written out (Ozertem & Erdogmus 2011)."""
    n, p = X.shape
    norm = 1.0 / (n * (2 * np.pi * h**2) ** (p / 2))
    out = []
    for x in np.array(queries, dtype=float):
        for _ in range(max_iter):
            diff = X - x
            w = np.exp(-(diff**2).sum(axis=1) / (2 * h**2))
            dens = norm * w.sum()
            grad = norm * (w[:, None] * diff).sum(axis=0) / h**2
            hess = norm * sum(wi * (np.outer(di, di) / h**4 - np.eye(p) / h**2) for wi, di in zip(w, diff))
            log_hess = hess / dens - np.outer(grad, grad) / dens**2
            V = np.linalg.eigh(log_hess)[1][:, : p - dim]
            shift = (w[:, None] * X).sum(axis=0) / w.sum() - x
            if np.linalg.norm(V.T @ shift) / h <= tol:
                break
            x = x + V @ (V.T @ shift)
        out.append(x)
    return np.array(out)


def noisy_circle(n, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 2 * np.pi, n)
    return np.column_stack([np.cos(t), np.sin(t)]) + noise * rng.standard_normal((n, 2))


def test_equals_the_dense_textbook_algorithm():
    X = noisy_circle(2000)
    queries = X[::40]
    model = DensityRidge(bandwidth=0.25, tol=1e-8, density_threshold=0.0, truncate=None, projection="scms")
    model.fit(X, queries=queries)
    expected = textbook_scms(X, queries, 0.25, 1)
    assert model.n_dropped_ == {"low density": 0, "not converged": 0, "not on a ridge": 0}
    np.testing.assert_allclose(model.ridge_points_, expected, atol=1e-8)
    np.testing.assert_allclose(model.transform(queries), expected, atol=1e-8)  # transform is the same SCMS
    snapped = model.set_params(projection="nearest").transform(queries + 1e-3)
    np.testing.assert_allclose(snapped, expected, atol=1e-12)  # each query's nearest ridge point is its own


def hausdorff(a, b):
    d = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
    return max(d.min(axis=0).max(), d.min(axis=1).max())


def test_a_noisy_circle_gives_a_ridge_on_the_circle():
    model = DensityRidge(random_state=0).fit(noisy_circle(2000))
    t = np.linspace(0, 2 * np.pi, 720, endpoint=False)
    assert hausdorff(model.ridge_points_, np.column_stack([np.cos(t), np.sin(t)])) < 0.05
    assert model.n_iter_ < 50 and sum(model.n_dropped_.values()) < 20


def test_two_crossing_filaments_are_both_found():
    rng = np.random.default_rng(1)
    s = rng.uniform(-1, 1, 3000)
    on_first = rng.random(3000) < 0.5
    X = np.where(on_first[:, None], np.column_stack([s, 0.5 * s]), np.column_stack([s, -0.5 * s]))
    X = X + 0.03 * rng.standard_normal(X.shape)
    model = DensityRidge(random_state=0).fit(X)
    R = model.ridge_points_
    gap = np.minimum(np.abs(R[:, 1] - 0.5 * R[:, 0]), np.abs(R[:, 1] + 0.5 * R[:, 0])) / np.sqrt(1.25)
    away = np.abs(R[:, 0]) > 0.2  # where the two filaments meet, the ridge rounds the crossing
    assert np.median(gap) < 0.01 and np.quantile(gap[away], 0.95) < 0.03
    for sign in (1, -1):  # each filament is covered from end to end
        t = np.linspace(-0.8, 0.8, 50)
        line = np.column_stack([t, sign * 0.5 * t])
        assert np.sqrt(((line[:, None, :] - R[None, :, :]) ** 2).sum(axis=2)).min(axis=1).max() < 0.05
        near = np.abs(R[:, 1] - sign * 0.5 * R[:, 0]) < 0.03
        assert near.sum() > 0.3 * len(R)


def test_a_filament_in_three_dimensions():
    rng = np.random.default_rng(2)
    t = rng.uniform(0, 3 * np.pi, 3000)
    helix = lambda t: np.column_stack([np.cos(t), np.sin(t), 0.3 * t])  # noqa: E731
    X = helix(t) + 0.05 * rng.standard_normal((3000, 3))
    model = DensityRidge(dim=1, random_state=0).fit(X)
    truth = helix(np.linspace(0, 3 * np.pi, 3000))
    d = np.sqrt(((model.ridge_points_[:, None, :] - truth[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    assert np.median(d) < 0.03 and len(model.ridge_points_) > 0.9 * 3000 * min(1, 5000 / 3000)


def test_a_two_dimensional_ridge_is_a_sheet():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(-1, 1, 3000), rng.uniform(-1, 1, 3000), 0.05 * rng.standard_normal(3000)])
    model = DensityRidge(dim=2, bandwidth=0.1, random_state=0, density_threshold=0.3).fit(X)
    height = np.abs(model.ridge_points_[:, 2])
    assert np.median(height) < 0.01 and np.quantile(height, 0.95) < 0.03


@pytest.fixture(scope="module")
def dense_circle():
    """8,000 rows of a noisy circle and the ridge of their untruncated density from 400 of them."""
    X = noisy_circle(8000, seed=4)
    return X, DensityRidge(bandwidth=0.2, truncate=None, density_threshold=0.0).fit(X, queries=X[:400])


@pytest.mark.parametrize("which", ["truncated at 3h", "truncated at 4h", "sampled"])
def test_the_approximations_stay_near_the_dense_ridge(which, dense_circle):
    X, dense = dense_circle
    queries = X[:400]
    if which.startswith("truncated"):  # measured here: 8e-4 / 2e-3 at 3h, 3e-5 / 7e-5 at 4h (median / max)
        cut = float(which[-2])
        approx = DensityRidge(bandwidth=0.2, truncate=cut, density_threshold=0.0).fit(X, queries=queries)
        assert approx.truncate_ == cut
        gap = np.linalg.norm(approx.ridge_points_ - dense.ridge_points_, axis=1)
        assert np.median(gap) < (2e-3 if cut == 3 else 1e-4) and gap.max() < (5e-3 if cut == 3 else 2e-4)
    else:  # a uniform sample of 2,000 of the 8,000 rows as the support: the ridge moves across by ~0.007 (median)
        approx = DensityRidge(bandwidth=0.2, max_samples=2000, density_threshold=0.0, random_state=0)
        approx.fit(X, queries=queries)
        assert len(approx.support_) == 2000
        across = np.abs(np.linalg.norm(approx.ridge_points_, axis=1) - np.linalg.norm(dense.ridge_points_, axis=1))
        assert np.median(across) < 0.01 and across.max() < 0.03


@pytest.mark.parametrize("projection", ["nearest", "scms"])
def test_transform_is_blockwise_and_chunking_does_not_matter(projection):
    X = noisy_circle(3000, seed=5)
    model = DensityRidge(random_state=0, projection=projection).fit(X)
    new = noisy_circle(500, seed=6)
    expected = model.transform(new)
    for chunks in (500, 97):
        lazy = model.transform(da.from_array(new, chunks=chunks))
        assert isinstance(lazy, da.Array)
        np.testing.assert_allclose(lazy.compute(), expected, atol=1e-12)
    np.testing.assert_allclose(model.distances(new), np.linalg.norm(expected - new, axis=1), atol=1e-12)
    if projection == "nearest":
        gaps = np.sqrt(((new[:, None, :] - model.ridge_points_[None, :, :]) ** 2).sum(axis=2))
        np.testing.assert_allclose(expected, model.ridge_points_[gaps.argmin(axis=1)])
        assert model.on_ridge(new).all() and 0 < model.ridge_spacing_ < 0.01
    else:
        assert model.on_ridge(new).mean() > 0.95
    assert np.abs(np.linalg.norm(expected[model.on_ridge(new)], axis=1) - 1).max() < 0.05


@pytest.mark.parametrize(
    "max_samples, batches",
    [
        (5000, [700, 900]),  # all rows stay the support
        (1000, [700, 900, 400]),  # the second batch crosses max_samples: all rows, then a sample
        (500, [700, 600]),  # a sample from the start
    ],
)
def test_partial_fit_equals_a_fit_on_every_row_seen(max_samples, batches, tmp_path):
    import bigdr

    X = noisy_circle(sum(batches), seed=8)
    params = {"max_samples": max_samples, "n_queries": 300, "random_state": 3}
    whole = DensityRidge(**params).fit(X)
    model = DensityRidge(**params)
    ends = np.cumsum([0, *batches])
    for i, (a, b) in enumerate(zip(ends[:-1], ends[1:])):
        if i == 1:  # a saved and loaded model learns on
            model.save(tmp_path / "ridge.zarr")
            model = bigdr.load(tmp_path / "ridge.zarr")
        model.partial_fit(da.from_array(X[a:b], chunks=251))
    assert model.n_samples_seen_ == len(X) and len(model.support_) == min(max_samples, len(X))
    np.testing.assert_array_equal(model.support_indices_, whole.support_indices_)
    np.testing.assert_array_equal(model.support_, whole.support_)
    assert model.bandwidth_ == whole.bandwidth_
    np.testing.assert_allclose(model.ridge_points_, whole.ridge_points_, atol=1e-12)


def test_a_failed_partial_fit_leaves_the_model_as_it_was():
    X = noisy_circle(1200, seed=9)
    model = DensityRidge(random_state=0, n_queries=200).fit(X[:800])
    before = {k: np.copy(getattr(model, k)) for k in ("support_", "support_indices_", "ridge_points_")}
    with pytest.raises(ValueError, match="expecting 2 features"):
        model.partial_fit(np.ones((10, 3)))
    model.set_params(max_iter=1)  # no query point settles within one step
    with pytest.raises(ValueError, match="No query point settled"):
        model.partial_fit(X[800:])
    assert model.n_samples_seen_ == 800
    for k, v in before.items():
        np.testing.assert_array_equal(getattr(model, k), v)


def test_runs_on_a_real_cluster():
    distributed = pytest.importorskip("distributed")
    X = noisy_circle(3000, seed=7)
    model = DensityRidge(random_state=0).fit(X)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with distributed.Client(cluster):
            lazy = DensityRidge(random_state=0).fit(da.from_array(X, chunks=1000))
            Y = lazy.transform(da.from_array(X[:600], chunks=150)).compute()
    np.testing.assert_allclose(lazy.ridge_points_, model.ridge_points_, atol=1e-12)
    np.testing.assert_allclose(Y, model.transform(X[:600]), atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, X, message",
    [
        ({"bandwidth": 0.0}, noisy_circle(100), "bandwidth"),
        ({"bandwidth": -1.0}, noisy_circle(100), "bandwidth"),
        ({"dim": 2}, noisy_circle(100), "less than n_features"),
        ({}, noisy_circle(3), "too few"),
        ({"density_threshold": 1.0}, noisy_circle(100), "density_threshold"),
    ],
)
def test_bad_input_is_refused(kwargs, X, message):
    with pytest.raises(ValueError, match=message):
        DensityRidge(**kwargs).fit(X)


def test_ridge_stability_falls_as_the_bandwidth_grows_past_the_noise():
    from bigdr.curves.density_ridge import ridge_stability

    X = noisy_circle(4000, seed=9)
    result = ridge_stability(X, [0.03, 0.1, 0.3], n_queries=300, random_state=0)
    assert result.instability.shape == (3,) and (result.ridge_points > 0).all()
    assert result.instability[0] > 2 * result.instability[2]  # a bandwidth below the noise follows each half's noise


def test_query_points_that_do_not_settle_are_counted_in_a_convergence_warning():
    from bigdr.exceptions import ConvergenceWarning

    X = noisy_circle(3_000)
    with pytest.warns(ConvergenceWarning, match=r"query points did not settle .* max_iter=2 "):
        model = DensityRidge(max_iter=2, random_state=0).fit(X)
    assert model.n_dropped_["not converged"] > 0
