import dask
import pytest

from bigdr.runtime.scheduler import ENV, default_spec, use_scheduler


def test_threads_by_default_and_from_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert default_spec() == "threads"
    monkeypatch.setenv(ENV, "sync")
    with use_scheduler() as client:
        assert client is None
        assert dask.config.get("scheduler") == "sync"


def test_unknown_spec_names_the_choices():
    with pytest.raises(ValueError, match="'threads', 'local-cluster', an address"):
        with use_scheduler("no-such-thing"):
            pass


def test_unreachable_scheduler_is_a_clear_error():
    # distributed retries a refused connection until the timeout; 1 s keeps the suite fast
    with dask.config.set({"bigdr.connect-timeout": "1s"}):
        with pytest.raises(ValueError, match="Cannot reach the dask scheduler.*Is it running"):
            with use_scheduler("tcp://127.0.0.1:9"):
                pass


def _slow(block):
    import time

    time.sleep(0.05)
    return block


@pytest.mark.parametrize("where", ["threads", "cluster"])
def test_progress_lines_for_logs(where, capsys, request):
    """Progress as plain lines (for logs and CI), on threads and on a real cluster."""
    import re

    import dask.array as da

    from bigdr.runtime.compute import compute, progress

    X = da.ones((40, 3), chunks=(1, 3)).map_blocks(_slow)
    with dask.config.set({"bigdr.progress-interval": 0.1}), progress("lines"):
        if where == "cluster":
            client = request.getfixturevalue("cluster_client")
            with client.as_current(), dask.config.set(scheduler=client.get):
                (total,) = compute(X.sum())
        else:
            (total,) = compute(X.sum())
    assert total == 120
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) >= 2 and all(re.fullmatch(r"bigdr: [\d,]+ of [\d,]+ tasks \(\d+%\), \d+ s", ln) for ln in lines)
    assert lines[-1].split("(")[1].startswith("100%")
    assert "\r" not in "".join(lines)


def test_progress_lines_on_a_cluster_do_not_hold_back_the_result(cluster_client):
    """The result comes when the tasks end, not at the next progress line (an hour away here)."""
    import threading

    import dask.array as da

    from bigdr.runtime.compute import compute, progress

    out = []

    def run():
        with dask.config.set({"bigdr.progress-interval": 3600}), progress("lines"):
            with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
                out.append(compute(da.ones((40, 3), chunks=(1, 3)).sum()))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert out == [(120,)]


def test_progress_rejects_unknown_modes():
    from bigdr.runtime.compute import progress

    with pytest.raises(ValueError, match="'bar', 'lines' or False"):
        with progress("verbose"):
            pass


def test_the_driver_takes_the_scheduler_threads_for_blas_only_between_computes():
    import dask.array as da
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    from bigdr.runtime.compute import compute, driver_blas

    def blas_threads():
        return max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")

    seen = []

    def record(block):
        seen.append(blas_threads())
        return block

    X = da.ones((40, 3), chunks=10).map_blocks(record, dtype=float, meta=np.empty((0, 0)))
    with threadpool_limits(limits=1, user_api="blas"), dask.config.set(scheduler="threads", num_workers=2):
        with driver_blas():
            inside = blas_threads()
            (total,) = compute(X.sum())
        after = blas_threads()
    assert (inside, after, float(total)) == (2, 1, 120.0)
    assert seen == [1, 1, 1, 1]  # dask's threads keep one BLAS thread each


def test_a_fit_from_an_h5ad_file_imports_neither_distributed_nor_zarr(tmp_path):
    """A process's start is part of every short job: distributed (0.2 s) and zarr (0.14 s) are not needed here."""
    import subprocess
    import sys

    import anndata
    import scipy.sparse as sp

    path = tmp_path / "cells.h5ad"
    anndata.AnnData(sp.random(300, 40, density=0.1, format="csr", dtype="float32", random_state=0)).write_h5ad(path)
    code = (
        "import sys, dask, bigdr\n"
        "dask.config.set(num_workers=2)\n"
        f"model = bigdr.TruncatedSVD(3, random_state=0).fit({str(path)!r})\n"
        "print(model.components_.shape, 'distributed' in sys.modules, 'zarr' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["(3,", "40)", "False", "False"]


def test_compute_keeps_a_named_scheduler_and_finds_a_client(cluster_client):
    from bigdr.runtime.compute import _threads_unless_asked

    assert _threads_unless_asked({"scheduler": "sync"}) == {"scheduler": "sync"}
    assert _threads_unless_asked({}) == {}  # distributed is imported: dask looks for the client itself


def test_a_fitted_piece_is_scattered_once_per_client_and_read_by_every_task(cluster_client):
    """On a cluster a model's piece is a future made once (not data inside each graph); with threads, a named key."""
    import dask.array as da
    import numpy as np

    from bigdr.runtime.compute import compute, model_key

    class Piece:
        def __init__(self, scale):
            self.scale = scale

    piece = Piece(np.arange(3.0))
    local = model_key(piece, "bigdr-piece-test")
    assert local.key == "bigdr-piece-test"
    X = da.ones((40, 3), chunks=(10, 3))
    expected = np.ones((40, 3)) * np.arange(3.0)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        first = model_key(piece, "bigdr-piece-test")
        assert model_key(piece, "bigdr-piece-test") is first  # reused by later graphs
        assert model_key(Piece(np.arange(3.0)), "bigdr-piece-test") is not first  # another object, another future
        Y = da.map_blocks(lambda b, p: b * p.scale, X, first, dtype=float)
        (out,) = compute(Y)
        np.testing.assert_array_equal(out, expected)
        # the graph names the piece held on the cluster; it does not carry the piece itself
        assert cluster_client.who_has([first])[first.key]
        assert not any(isinstance(v, Piece) for v in dict(Y.__dask_graph__()).values())
