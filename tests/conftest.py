import os

import numpy as np
import pytest

# One BLAS thread per dask thread in the test process, as in production.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def cluster_client():
    """A real distributed scheduler with two worker processes on 127.0.0.1."""
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        with Client(cluster, set_as_default=False) as client:
            yield client


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def correlated(rng, n, p, offset=3.0):
    """Data with a decaying spectrum and a non-zero mean."""
    scales = np.geomspace(10, 0.1, p)
    Q, _ = np.linalg.qr(rng.standard_normal((p, p)))
    return (rng.standard_normal((n, p)) * scales) @ Q.T + offset


@pytest.fixture(scope="session")
def swiss_roll_small():
    """3000 points of a noisy swiss roll (numpy) and their roll coordinate."""
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(3000, noise=0.05, seed=11)
    return X.compute(), coords.compute()[:, 0]


@pytest.fixture(scope="session")
def manifold_50d():
    """2000 points on a 5-D manifold embedded in 50-D plus small noise."""
    rng = np.random.default_rng(5)
    latent = rng.uniform(-1, 1, size=(2000, 5))
    lift = rng.standard_normal((5, 50))
    return np.tanh(latent @ lift) + 0.01 * rng.standard_normal((2000, 50))


def exact_neighbors(X, Q, k, exclude_self=False):
    """Brute-force reference (scikit-learn)."""
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=k + int(exclude_self), algorithm="brute").fit(X)
    dist, ind = nn.kneighbors(Q)
    return (ind[:, 1:], dist[:, 1:]) if exclude_self else (ind, dist)


def rolled_layers(n, seed=0):
    """Two rolled-up sheets side by side in 20-D: a search that goes astray lands on the other layer."""
    from bigdr.datasets import make_swiss_roll

    a = np.asarray(make_swiss_roll(n, noise=0.0, seed=seed)[0])
    b = np.asarray(make_swiss_roll(n, noise=0.0, seed=seed + 1)[0])
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((20, 6)))[0]
    return np.ascontiguousarray(np.hstack([a, b]) @ Q.T)


def recall(found, exact):
    return np.mean([len(np.intersect1d(f, e)) / len(e) for f, e in zip(found, exact)])


def counted_blocks(X, rows):
    """``X`` (numpy or scipy.sparse) as a dask array of ``rows``-row blocks, each read by a task that logs it.

    Returns the array and the list of first rows read, one entry per read (a pass reads every block once).
    """
    import threading

    import dask
    import dask.array as da

    reads, lock = [], threading.Lock()

    def read(lo, hi):
        with lock:
            reads.append(lo)
        return X[lo:hi]

    bounds = list(range(0, X.shape[0], rows)) + [X.shape[0]]
    meta = X[:0]
    parts = [
        da.from_delayed(dask.delayed(read, pure=True)(lo, hi), shape=(hi - lo, X.shape[1]), dtype=X.dtype, meta=meta)
        for lo, hi in zip(bounds[:-1], bounds[1:])
    ]
    return da.concatenate(parts), reads
