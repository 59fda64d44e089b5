"""The Hastie-Stuetzle curve against a dense textbook implementation, known curves, chunking, a cluster run."""

import dask
import dask.array as da
import numpy as np
import pytest

from bigdr.core.polyline import project
from bigdr.curves.hastie_stuetzle import REACH, SHRINK, START_SPAN, HastieStuetzleCurve


def extend(V, reach):
    if reach == 0:
        return V
    u0 = (V[0] - V[1]) / np.linalg.norm(V[0] - V[1])
    u1 = (V[-1] - V[-2]) / np.linalg.norm(V[-1] - V[-2])
    return np.vstack([V[0] + reach * u0, V, V[-1] + reach * u1])


def textbook_project(X, V, reach=0.0):
    """Every row against every segment, one at a time, in float64: (arc length, squared distance)."""
    line = extend(V, reach)
    arcs, sqs = [], []
    for x in X:
        best, start = (np.inf, 0.0), -reach
        for a, b in zip(line[:-1], line[1:]):
            d = b - a
            t = min(max((x - a) @ d / (d @ d), 0.0), 1.0)
            sq = float(((x - a - t * d) ** 2).sum())
            if sq < best[0]:
                best = (sq, start + t * np.linalg.norm(d))
            start += np.linalg.norm(d)
        sqs.append(best[0])
        arcs.append(best[1])
    return np.array(arcs), np.array(sqs)


def textbook_hs(X, n_vertices, span, iterations):
    """Hastie & Stuetzle's iteration with an exact (unbinned) local linear smoother, the same start and schedule."""
    mean = X.mean(axis=0)
    v = np.linalg.eigh(np.cov(X.T))[1][:, -1]
    t = (X - mean) @ v
    V = mean + np.linspace(t.min(), t.max(), n_vertices)[:, None] * v
    for it in range(iterations):
        L = np.sum(np.linalg.norm(np.diff(V, axis=0), axis=1))
        arc, _ = textbook_project(X, V, REACH * L)
        h = max(span, START_SPAN * SHRINK**it) * L
        new = []
        for lv in np.linspace(arc.min(), arc.max(), n_vertices):
            w = np.exp(-0.5 * ((arc - lv) / h) ** 2)
            dl = arc - lv
            s0, s1, s2 = w.sum(), (w * dl).sum(), (w * dl**2).sum()
            t0, t1 = (w[:, None] * X).sum(axis=0), ((w * dl)[:, None] * X).sum(axis=0)
            new.append((s2 * t0 - s1 * t1) / (s0 * s2 - s1**2))
        V = np.array(new)
    return V


def noisy(truth, n, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = truth(rng.uniform(0, 1, n))
    return X + noise * rng.standard_normal(X.shape)


def helix(t):
    a = 1.5 * np.pi * t
    return np.column_stack([np.cos(a), np.sin(a), 0.3 * a])


def sine(t):
    return np.column_stack([4 * t, np.sin(2 * np.pi * t)])


def median_distance(model, truth):
    curve = model.inverse_transform(np.linspace(0, 1, 500))
    true = truth(np.linspace(0, 1, 5000))
    return float(np.median(np.sqrt(((curve[:, None, :] - true[None]) ** 2).sum(axis=2)).min(axis=1)))


@pytest.mark.parametrize("reach", [0.0, 0.4])
def test_projection_is_the_nearest_point_of_every_segment(reach):
    rng = np.random.default_rng(1)
    V = np.cumsum(rng.standard_normal((15, 3)), axis=0)
    X = V[rng.integers(0, 15, 400)] + rng.standard_normal((400, 3))
    got = project(X, V, reach)
    arc, sq = textbook_project(X, V, reach)
    np.testing.assert_allclose(got.sq, sq, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.arc, arc, atol=1e-9)


def test_equals_the_textbook_iteration_up_to_the_binning():
    X = noisy(helix, 300, seed=2)
    expected = textbook_hs(X, 20, 0.05, 6)
    for bins, tol in ((200_000, 1e-7), (None, 2e-3)):  # fine bins: the textbook; the default: within its error
        model = HastieStuetzleCurve(20, span=0.05, n_bins=bins, max_iter=6, tol=0.0).fit(X)
        V = model.vertices_ if np.linalg.norm(model.vertices_[0] - expected[0]) < 1 else model.vertices_[::-1]
        np.testing.assert_allclose(V, expected, atol=tol)


@pytest.mark.parametrize("truth", [helix, sine])
def test_a_noisy_curve_is_found(truth):
    X = noisy(truth, 20_000, seed=3)
    model = HastieStuetzleCurve().fit(da.from_array(X, chunks=5_000))
    assert model.converged_ and model.n_iter_ < 50
    assert median_distance(model, truth) < 0.01  # noise 0.05 per axis
    Z = model.transform(X)
    assert Z.shape == (20_000, 1) and (Z >= 0).all() and (Z <= 1).all()
    np.testing.assert_allclose(np.linalg.norm(model.inverse_transform(Z) - X, axis=1), model.distances(X), atol=1e-9)
    assert abs(model.objective_[-1] - np.mean(model.distances(X) ** 2)) < 0.1 * model.objective_[-1]


def test_chunking_does_not_matter_and_a_cluster_gives_the_same_curve(cluster_client):
    X = noisy(sine, 3_000, seed=4)
    whole = HastieStuetzleCurve(max_iter=8, tol=0.0).fit(X)
    pieces = HastieStuetzleCurve(max_iter=8, tol=0.0).fit(da.from_array(X, chunks=397))
    np.testing.assert_allclose(pieces.vertices_, whole.vertices_, atol=1e-9)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = HastieStuetzleCurve(max_iter=8, tol=0.0).fit(da.from_array(X, chunks=1000))
    np.testing.assert_allclose(remote.vertices_, whole.vertices_, atol=1e-9)


@pytest.mark.parametrize(
    "kwargs, X, message",
    [
        ({"span": 0.0}, noisy(sine, 100), "span"),
        ({"span": 1.5}, noisy(sine, 100), "span"),
        ({"n_vertices": 2}, noisy(sine, 100), "n_vertices"),
        ({}, np.ones((50, 3)), "do not spread"),
    ],
)
def test_bad_input_is_refused(kwargs, X, message):
    with pytest.raises(ValueError, match=message):
        HastieStuetzleCurve(**kwargs).fit(X)


def test_an_oscillating_fit_stops_at_its_best_curve_and_max_iter_warns():
    import warnings

    from bigdr.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 5_000)  # a closed loop: D^2 oscillates instead of settling
    X = np.column_stack([np.cos(t), np.sin(t)]) + 0.1 * rng.standard_normal((5_000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = HastieStuetzleCurve().fit(X)
    assert model.converged_ and model.n_iter_ < model.max_iter
    final = np.array(model.objective_[-model.n_iter_no_change - 1 :])
    assert final.min() == final[0]  # the best pass came n_iter_no_change iterations before the end
    # and its curve is the one kept (distances() projects without the ends extended while fitting)
    assert abs(np.mean(model.distances(X) ** 2) - final[0]) < 0.05 * final[0]
    with pytest.warns(ConvergenceWarning, match="max_iter=4"):
        HastieStuetzleCurve(max_iter=4).fit(X)
