"""Running dask graphs: one place that decides threads, BLAS and the scheduler.

BLAS threads and dask threads multiply: two dask threads each running a
two-thread OpenBLAS call oversubscribe a 2-core machine and are slower than
either alone. On the threaded scheduler we therefore cap BLAS at one thread per
dask thread for the duration of a compute. ``distributed`` workers already set
``OMP_NUM_THREADS=1`` and friends in their environment, so nothing is needed
there.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import dask
from threadpoolctl import threadpool_limits


def _distributed_client():
    """The default ``distributed.Client`` if one is active, else ``None``."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    try:
        return default_client()
    except ValueError:
        return None


def _uses_local_threads() -> bool:
    scheduler = dask.config.get("scheduler", None)
    if scheduler in ("threads", "threading", None):
        return _distributed_client() is None
    return False


@contextlib.contextmanager
def blas_limited():
    """Cap BLAS at one thread while the threaded scheduler runs our graphs."""
    if _uses_local_threads():
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    else:
        yield


def compute(*collections: Any, **kwargs: Any) -> tuple:
    """``dask.compute`` with BLAS threads capped on the threaded scheduler."""
    with blas_limited():
        if _progress:
            return _compute_with_progress(collections, kwargs)
        return dask.compute(*collections, **kwargs)


_progress = False


@contextlib.contextmanager
def progress(enabled: bool = True):
    """Show a progress bar for every compute inside the block (threads or distributed)."""
    global _progress
    previous, _progress = _progress, enabled
    try:
        yield
    finally:
        _progress = previous


def _compute_with_progress(collections, kwargs):
    client = _distributed_client()
    if client is not None:
        from distributed import progress as distributed_progress

        futures = client.compute(list(collections), **kwargs)
        distributed_progress(futures)
        print(file=sys.stderr)
        return tuple(client.gather(futures))
    from dask.diagnostics import ProgressBar

    with ProgressBar(minimum=1.0, out=sys.stderr):
        return dask.compute(*collections, **kwargs)


def shared(value: Any) -> Any:
    """``value`` as one input every task of a graph can read.

    On a cluster it is scattered to every worker at once (a future), so it
    does not travel through the scheduler and from worker to worker with the
    tasks; otherwise it is one delayed key.
    """
    client = _distributed_client()
    if client is not None:
        return client.scatter(value, broadcast=True, hash=False)
    return dask.delayed(value, traverse=False)


def parallelism() -> int:
    """How many tasks the current scheduler runs at once (worker threads in all)."""
    client = _distributed_client()
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # pragma: no cover - a client between connections
            return 1
    import os

    return max(1, int(dask.config.get("num_workers", None) or os.cpu_count() or 1))
