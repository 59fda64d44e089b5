import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bigdr.blockwise.sampling import maxmin, select_landmarks, uniform_sample


@settings(max_examples=15, deadline=None)
@given(chunk=st.integers(50, 5000))
def test_random_landmarks_do_not_depend_on_chunking(chunk):
    X = np.random.default_rng(0).standard_normal((5000, 3))
    ref_rows, ref_idx = select_landmarks(X, 40, random_state=3)
    rows, idx = select_landmarks(da.from_array(X, chunks=(chunk, 3)), 40, random_state=3)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(rows, X[idx])


def test_uniform_sample_is_uniform_and_seeded():
    X = np.arange(100_000, dtype=float).reshape(-1, 1)
    _, a = uniform_sample(X, 2000, random_state=1)
    _, b = uniform_sample(X, 2000, random_state=2)
    assert len(np.unique(a)) == 2000 and not np.array_equal(np.sort(a), np.sort(b))
    counts = np.histogram(a, bins=10, range=(0, 100_000))[0]
    assert counts.min() > 150 and counts.max() < 250  # 200 expected per decile


def test_maxmin_covers_evenly(swiss_roll_small):
    X, t = swiss_roll_small
    rows, idx = select_landmarks(X, 60, method="maxmin", random_state=0)
    _, ridx = select_landmarks(X, 60, method="random", random_state=0)
    np.testing.assert_array_equal(rows, X[idx])

    def covering_radius(ids):
        d = np.linalg.norm(X[:, None, :] - X[ids][None, :, :], axis=2).min(axis=1)
        return d.max()

    assert covering_radius(idx) < 0.7 * covering_radius(ridx)


def test_maxmin_order_is_farthest_point():
    pts = np.array([[0.0], [1.0], [10.0], [4.0]])
    np.testing.assert_array_equal(maxmin(pts, 4), [0, 2, 3, 1])


@pytest.mark.parametrize(
    "kw, exc",
    [
        ({"n_landmarks": 0}, ValueError),
        ({"n_landmarks": 11}, ValueError),
        ({"n_landmarks": 2.0}, TypeError),
        ({"n_landmarks": 2, "method": "kmeans"}, ValueError),
        ({"n_landmarks": 5, "method": "maxmin", "sample_size": 3}, ValueError),
    ],
)
def test_bad_input(kw, exc):
    with pytest.raises(exc):
        select_landmarks(np.zeros((10, 2)), **kw)


def test_sample_is_independent_of_a_generator_seeded_alike():
    # bigdr.datasets draws block b from rng([seed, b]); the sample's keys must
    # not be those same numbers, or it picks the smallest roll angles only.
    from scipy.stats import kstest

    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(20_000, seed=0)
    _, idx = uniform_sample(X, 2000, random_state=0)
    t = coords[:, 0].compute()
    u = (t[idx] - 1.5 * np.pi) / (3 * np.pi)  # uniform on [0, 1] for an unbiased sample
    assert kstest(u, "uniform").pvalue > 1e-3
