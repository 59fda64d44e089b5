"""Principal curves against a dense textbook implementation, chunking, recovery of known curves, a cluster run."""

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bigdr.curves.principal_curve import PrincipalCurve
from bigdr.exceptions import ConvergenceWarning


def textbook(X, M, width, lam, grid_size, iterations):
    """Smola et al. (2001), written out with dense matrices and one row at a time."""
    n = len(X)
    mean = X.mean(axis=0)
    Xc = X - mean
    v = np.linalg.eigh(Xc.T @ Xc)[1][:, -1]
    v = v * np.sign(v[np.argmax(np.abs(v))])
    c = np.linspace(0, 1, M)
    grid = np.linspace(0, 1, grid_size)

    def k(a, b):
        return np.exp(-(np.subtract.outer(a, b) ** 2) / (2 * width**2))

    def alpha_of(xi):
        K = k(xi, c)
        return np.linalg.solve(K.T @ K + lam * n / 2 * k(c, c), K.T @ Xc)

    t = Xc @ v
    alpha = alpha_of((t - t.min()) / (t.max() - t.min()))  # the first principal component, scaled to [0, 1]
    for _ in range(iterations):
        xi = np.empty(n)
        for i, x in enumerate(Xc):
            curve = k(grid, c) @ alpha
            z0 = grid[np.argmin(((curve - x) ** 2).sum(axis=1))]
            z, best = z0, (np.inf, z0)
            for step in range(3):  # Newton on |x - f(z)|^2 (Gauss-Newton where f''.r outweighs |f'|^2), keep the best
                kz, u = k(np.array([z]), c)[0], c - z
                f, f1, f2 = kz @ alpha, (kz * u / width**2) @ alpha, (kz * (u**2 / width**4 - 1 / width**2)) @ alpha
                r = x - f
                best = min(best, (r @ r, z))
                if step == 2:
                    break
                h = f1 @ f1 - f2 @ r
                z = float(np.clip(np.clip(z + f1 @ r / (h if h > 0 else f1 @ f1), z0 - grid[1], z0 + grid[1]), 0, 1))
            z = best[1]
            xi[i] = z
        alpha = alpha_of(xi)
    return alpha, mean


@pytest.fixture(scope="module")
def noisy_circle():
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 1.5 * np.pi, 1500)  # three quarters of a circle: an open curve
    return np.column_stack([np.cos(t), np.sin(t), 0.2 * t]) + 0.05 * rng.standard_normal((1500, 3))


def test_equals_the_dense_textbook_algorithm(noisy_circle):
    X = noisy_circle
    model = PrincipalCurve(12, reg=1e-3, grid_size=120, max_iter=4, tol=0.0, init="pca")
    model.fit(da.from_array(X, chunks=400))
    alpha, mean = textbook(X, 12, 2 / 11, 1e-3, 120, iterations=4)
    np.testing.assert_allclose(model.mean_, mean, atol=1e-12)
    # the curves, not the coefficients: K_c is ill-conditioned, so alpha is determined less well than f
    z = np.linspace(0, 1, 1000)
    curve = np.exp(-(np.subtract.outer(z, np.linspace(0, 1, 12)) ** 2) / (2 * (2 / 11) ** 2)) @ alpha + mean
    np.testing.assert_allclose(model.inverse_transform(z), curve, atol=1e-8)
    assert model.n_iter_ == 4 and model.n_passes_ == 7 and not model.converged_


def test_fits_a_noisy_curve_and_places_rows_on_it(noisy_circle):
    X = noisy_circle
    model = PrincipalCurve(15, reg=1e-3, max_iter=30).fit(X)
    assert np.all(np.diff(model.objective_) <= 1e-12 * abs(model.objective_[0]))  # R[f] never rises
    z = np.linspace(0, 1, 400)
    curve = model.inverse_transform(z)
    t = np.linspace(0, 1.5 * np.pi, 4000)
    truth = np.column_stack([np.cos(t), np.sin(t), 0.2 * t])
    gap = np.sqrt(((curve[:, None, :] - truth[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    assert np.median(gap) < 0.02  # the fitted curve lies on the true one, well inside the noise (0.05 per axis)
    Z, D = model.transform(X), model.distances(X)
    assert Z.shape == (len(X), 1) and (0 <= Z).all() and (Z <= 1).all()
    low, high = model.latent_range_[:, 0]  # the rows' range at the last pass, near that of the final curve
    assert 0 <= low < 0.05 and 0.95 < high <= 1 and abs(low - Z.min()) < 0.02 and abs(high - Z.max()) < 0.02
    np.testing.assert_allclose(np.linalg.norm(X - model.inverse_transform(Z), axis=1), D, atol=1e-10)
    lazy = model.transform(da.from_array(X, chunks=300))
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), Z)


def test_the_geodesic_start_does_not_keep_the_fold_of_the_first_component():
    # A three-quarter helix: its first principal component folds the two arms onto each other, and the
    # iterations from that start keep part of the fold (measured: twice the distance to the true curve).
    rng = np.random.default_rng(3000)
    a = 1.5 * np.pi * rng.uniform(0, 1, 3000)
    X = np.column_stack([np.cos(a), np.sin(a), 0.3 * a]) + 0.05 * rng.standard_normal((3000, 3))
    t = np.linspace(0, 1.5 * np.pi, 4000)
    truth = np.column_stack([np.cos(t), np.sin(t), 0.3 * t])
    median = {}
    for init in ("geodesic", "pca"):
        model = PrincipalCurve(20, reg=1e-3, max_iter=300, tol=1e-5, init=init).fit(X)
        curve = model.inverse_transform(np.linspace(*model.latent_range_[:, 0], 400))
        median[init] = np.median(np.sqrt(((curve[:, None] - truth[None]) ** 2).sum(axis=2)).min(axis=1))
    assert median["geodesic"] < 0.006 and median["geodesic"] < 0.7 * median["pca"]
    with pytest.raises(ValueError, match="init"):
        PrincipalCurve(init="isomap").fit(X)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(50, 900), min_size=1, max_size=4))
def test_any_chunking_gives_the_same_curve(noisy_circle, sizes):
    X = noisy_circle
    cuts = sorted({c for c in np.cumsum(sizes) if c < len(X)})
    chunks = tuple(np.diff([0, *cuts, len(X)]).tolist())
    whole = PrincipalCurve(10, max_iter=3, tol=0.0).fit(X)
    parts = PrincipalCurve(10, max_iter=3, tol=0.0).fit(da.from_array(X, chunks=(chunks, 3)))
    z = np.linspace(0, 1, 500)
    np.testing.assert_allclose(parts.inverse_transform(z), whole.inverse_transform(z), atol=1e-9)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_centres": 2}, "n_centres"),
        ({"width": 0.0}, "width"),
        ({"reg": 0.0}, "reg"),
        ({"grid_size": 5}, "grid_size"),
    ],
)
def test_bad_input(noisy_circle, params, match):
    with pytest.raises(ValueError, match=match):
        PrincipalCurve(**{"n_centres": 10, **params}).fit(noisy_circle)


def test_on_a_real_cluster(cluster_client, noisy_circle, tmp_path):
    import bigdr

    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(noisy_circle, chunks=(500, 3)), store)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        model = PrincipalCurve(10, max_iter=3, tol=0.0).fit(str(store))
    threaded = PrincipalCurve(10, max_iter=3, tol=0.0).fit(noisy_circle)
    z = np.linspace(0, 1, 500)
    np.testing.assert_allclose(model.inverse_transform(z), threaded.inverse_transform(z), atol=1e-9)


def test_projecting_in_pieces_changes_nothing(noisy_circle, monkeypatch):
    import bigdr.core.curves as curves

    whole = PrincipalCurve(10, max_iter=2, tol=0.0).fit(noisy_circle)
    monkeypatch.setattr(curves, "PIECE_ROWS", 97)
    pieces = PrincipalCurve(10, max_iter=2, tol=0.0).fit(noisy_circle)
    # the sums are added in another order, so equal to rounding; the curves, as alpha is ill-conditioned
    z = np.linspace(0, 1, 500)
    np.testing.assert_allclose(pieces.inverse_transform(z), whole.inverse_transform(z), atol=1e-9)
    np.testing.assert_allclose(pieces.transform(noisy_circle), whole.transform(noisy_circle), atol=1e-8)


def test_a_sample_phase_reaches_the_curve_of_full_passes_in_fewer_of_them(noisy_circle):
    X = da.from_array(noisy_circle, chunks=300)
    full = PrincipalCurve(15, reg=1e-3, max_iter=300, tol=1e-4).fit(X)
    sampled = PrincipalCurve(15, reg=1e-3, max_iter=300, tol=1e-4, sample_size=400, random_state=0).fit(X)
    assert sampled.n_sample_iter_ > 0 and len(sampled.sample_objective_) == sampled.n_sample_iter_
    assert sampled.n_passes_ == len(sampled.objective_) + 2  # covariance, sample, then one per iteration
    assert full.converged_ and sampled.converged_ and sampled.n_passes_ < full.n_passes_ / 2
    assert sampled.objective_[-1] <= full.objective_[-1] * (1 + 1e-3)
    z = np.linspace(0, 1, 2000)
    a, b = sampled.inverse_transform(z), full.inverse_transform(z)
    gap = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
    assert max(gap.min(axis=0).max(), gap.min(axis=1).max()) < 0.02  # the same curve, up to its parametrisation
    with pytest.raises(ValueError, match="sample_size"):
        PrincipalCurve(sample_size=1).fit(X)


def test_a_principal_manifold_fits_a_curved_sheet():
    from bigdr.curves.principal_curve import PrincipalManifold

    rng = np.random.default_rng(7)
    u, v = rng.uniform(-1, 1, 1500), rng.uniform(-1, 1, 1500)
    sheet = lambda u, v: np.column_stack([u, v, 0.5 * u**2 - 0.3 * v**2])  # noqa: E731
    X = sheet(u, v) + 0.03 * rng.standard_normal((1500, 3))
    model = PrincipalManifold(8, reg=1e-4, max_iter=12).fit(da.from_array(X, chunks=400))
    Z = model.transform(X)
    assert Z.shape == (1500, 2) and (0 <= Z).all() and (Z <= 1).all()
    assert np.all(np.diff(model.objective_) <= 1e-12 * abs(model.objective_[0]))  # R[f] never rises
    fitted = model.inverse_transform(Z)
    np.testing.assert_allclose(np.linalg.norm(X - fitted, axis=1), model.distances(X), atol=1e-10)
    truth = sheet(u, v)
    assert np.median(np.linalg.norm(fitted - truth, axis=1)) < 0.05  # on the sheet, within the noise (0.03 per axis)
    with pytest.raises(ValueError, match="n_features = 1"):
        PrincipalManifold().fit(X[:, :1])


def test_two_dimensional_projection_equals_a_dense_search_then_newton():
    """The 2-D projection step (grid search, then safeguarded Newton) against bounded quasi-Newton from 49 starts."""
    from scipy.optimize import minimize

    from bigdr.core.curves import centres, kernel, latent_grid, project

    rng = np.random.default_rng(8)
    c = centres(6, 2)
    alpha = rng.standard_normal((36, 3)) * 0.3
    X = rng.standard_normal((40, 3)) * 0.5
    got = project(X, alpha, c, 0.4, latent_grid(60, 2))
    f = lambda z: kernel(z.reshape(1, 2), c, 0.4) @ alpha  # noqa: E731
    for x, sq in zip(X, got.sq):

        def distance(w, x=x):
            return ((x - f(w)) ** 2).sum()

        best = min(
            (
                minimize(distance, s, bounds=[(0, 1), (0, 1)], options={"ftol": 1e-15, "gtol": 1e-12})
                for s in latent_grid(7, 2)
            ),
            key=lambda r: r.fun,
        )
        assert sq <= best.fun + 1e-10  # the minimum: as low as the best of 49 bounded local searches


def test_curve_projection_reaches_the_least_distance(noisy_circle):
    """The 1-D projection step (grid search, then Newton) against a bounded scalar search in each grid cell.

    Gauss-Newton steps alone overshoot where the residual is large against the curve's radius and
    leave rows above their least distance."""
    from scipy.optimize import minimize_scalar

    from bigdr.core.curves import kernel, project

    model = PrincipalCurve(15, reg=1e-4, max_iter=30).fit(noisy_circle)
    c, width, grid = model._settings()
    X = noisy_circle[:100] - model.mean_  # 40 bounded searches a row
    got = project(X, model.alpha_, c, width, grid)
    f = lambda z: kernel(np.array([[z]]), c, width)[0] @ model.alpha_  # noqa: E731
    edges = np.linspace(0, 1, 41)
    for x, sq in zip(X, got.sq):

        def distance(z, x=x):
            return ((x - f(z)) ** 2).sum()

        cells = zip(edges[:-1], edges[1:])
        options = {"xatol": 1e-12}
        best = min(minimize_scalar(distance, bounds=cell, method="bounded", options=options).fun for cell in cells)
        assert sq <= best + 1e-10


def test_reg_path_traces_the_fit_against_lambda(noisy_circle):
    from bigdr.curves.principal_curve import reg_path

    path = reg_path(noisy_circle, regs=[1e-5, 1e-3, 1e-1], random_state=0, n_centres=12, max_iter=20)
    assert path.regs.tolist() == [1e-5, 1e-3, 1e-1] and path.held_out.shape == (3,)
    assert np.all(np.diff(path.objective) > 0)  # more smoothing, a larger R[f] on the training rows
    assert path.held_out[-1] > 2 * path.held_out[0]  # lambda = 0.1 flattens the curve: new rows lie far from it
    assert path.chosen() in (1e-5, 1e-3) and path.held_out[path.regs == path.chosen()] <= 1.01 * path.held_out.min()
    with pytest.raises(ValueError, match="held_out"):
        reg_path(noisy_circle, held_out=1.0)


def test_the_chosen_lambda_is_the_largest_within_the_slack_of_the_best():
    from bigdr.curves.principal_curve import RegPath

    path = RegPath(np.array([1e-5, 1e-4, 1e-3, 1e-2]), np.zeros(4), np.array([1.002, 1.0, 1.009, 1.3]), np.ones(4))
    assert path.chosen() == 1e-3 and path.chosen(slack=0.0) == 1e-4 and path.chosen(slack=0.5) == 1e-2
    with pytest.raises(ValueError, match="slack"):
        path.chosen(slack=-1)


def test_partial_fit_adds_rows_to_the_sums_of_the_last_pass(noisy_circle):
    first, second = noisy_circle[:750], noisy_circle[750:]
    settings = {"n_centres": 15, "reg": 1e-3, "max_iter": 200, "tol": 1e-6}
    model = PrincipalCurve(**settings).fit(first)
    gram, cross = model.gram_.copy(), model.cross_.copy()
    before = model.alpha_.copy()
    model.partial_fit(da.from_array(second, chunks=97))
    assert model.n_samples_seen_ == 1500
    again = PrincipalCurve(**settings).fit(first).partial_fit(second)  # batches' chunking does not matter
    np.testing.assert_allclose(again.alpha_, model.alpha_, atol=1e-10)
    # the new rows' sums are those of their projections on the curve before the step
    from bigdr.core.curves import centres, curve_sums, latent_grid, project

    c, grid = centres(15), latent_grid(150, 1)
    xi, sq, K = project(second - model.mean_, before, c, model.width_, grid)
    expected = curve_sums(second - model.mean_, xi, c, model.width_, float(sq.sum()), K)
    np.testing.assert_allclose(model.gram_, gram + expected.gram, rtol=1e-10)
    np.testing.assert_allclose(model.cross_, cross + expected.cross, rtol=1e-10, atol=1e-10)
    whole = PrincipalCurve(**settings).fit(noisy_circle)
    # over the part of each curve the rows use (beyond it the ends are extrapolated)
    a = model.inverse_transform(np.linspace(*model.latent_range_[:, 0], 1000))
    b = whole.inverse_transform(np.linspace(*whole.latent_range_[:, 0], 1000))
    gap = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
    assert max(gap.min(axis=0).max(), gap.min(axis=1).max()) < 0.01  # near the curve of all rows
    assert PrincipalCurve(**settings).partial_fit(first).n_samples_seen_ == 750  # unfitted: fit


def _convergence_sets(n=5_000):
    """The three data sets the defaults were chosen on: a noisy closed circle, a swiss roll and an S-curve."""
    from sklearn.datasets import make_s_curve, make_swiss_roll

    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, n)
    circle = np.column_stack([np.cos(t), np.sin(t)]) + 0.1 * rng.standard_normal((n, 2))
    return {
        "circle": circle,
        "swiss roll": make_swiss_roll(n, noise=0.5, random_state=0)[0],
        "S-curve": make_s_curve(n, noise=0.05, random_state=0)[0],
    }


@pytest.mark.parametrize("name", ["circle", "swiss roll", "S-curve"])
def test_the_defaults_converge_on_ordinary_data(name):
    import warnings

    X = _convergence_sets()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = PrincipalCurve().fit(X)
    assert model.converged_ and model.n_iter_ <= model.max_iter
    assert abs(model.objective_[-2] - model.objective_[-1]) <= model.tol * model.objective_[-1]


def test_stopping_at_max_iter_warns_with_the_change_reached():
    X = _convergence_sets(2_000)["swiss roll"]
    with pytest.warns(ConvergenceWarning, match=r"max_iter=3 iterations the objective still changed by [0-9.e-]+"):
        model = PrincipalCurve(max_iter=3, tol=1e-12).fit(X)
    assert model.n_iter_ == 3 and not model.converged_


def test_a_closed_loop_starts_from_its_angle_not_folded_in_half():
    from bigdr.graph.sparse import geodesic_coordinates

    rng = np.random.default_rng(1)
    t = rng.uniform(0, 2 * np.pi, 2_000)
    X = np.column_stack([np.cos(t), np.sin(t)]) + 0.05 * rng.standard_normal((2_000, 2))
    z = geodesic_coordinates(X, 1)[:, 0]
    # the coordinate runs once around the loop: sorted by it, consecutive points are neighbours
    order = np.argsort(z)
    steps = np.linalg.norm(np.diff(X[order], axis=0), axis=1)
    assert np.median(steps) < 0.05 and np.quantile(steps, 0.99) < 0.3
    # an open arc keeps the first geodesic coordinate (arc length)
    arc = np.column_stack([np.cos(t * 0.7), np.sin(t * 0.7)])
    assert abs(np.corrcoef(geodesic_coordinates(arc, 1)[:, 0], t)[0, 1]) > 0.999
