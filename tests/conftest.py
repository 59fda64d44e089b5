import os

import numpy as np
import pytest

# One BLAS thread per dask thread in the test process, as in production.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def cluster_client():
    """A real distributed scheduler with two worker processes on 127.0.0.1."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
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
