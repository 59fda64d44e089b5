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
import time
import weakref
from typing import Any

import dask
import dask.callbacks
from threadpoolctl import threadpool_limits


def _distributed_client():
    """The default ``distributed.Client`` if one is active, else ``None``."""
    if "distributed" not in sys.modules:  # no client can exist, and importing distributed costs 0.2 s
        return None
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
def driver_blas():
    """BLAS on the scheduler's threads, for linear algebra in this process while no task of ours runs.

    Between computes the threaded scheduler's threads are idle, so BLAS may take their place without the
    two multiplying (ARPACK's reorthogonalisation against its Lanczos basis on the 1M-cell kNN graph, one-off:
    71 s on 2 threads against 91 s on one, the same products); a compute inside the block caps BLAS at one
    thread again while it runs.
    """
    if _uses_local_threads():
        with threadpool_limits(limits=local_threads(), user_api="blas"):
            yield
    else:
        yield


@contextlib.contextmanager
def blas_limited():
    """Cap BLAS at one thread while the threaded scheduler runs our graphs."""
    if _uses_local_threads():
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    else:
        yield


def _threads_unless_asked(kwargs: dict) -> dict:
    """``kwargs`` naming the threaded scheduler itself when it is the one dask would choose.

    Given no scheduler or a scheduler's name, dask imports ``distributed`` to look for a client (0.2 s of a
    process's start); with ``distributed`` never imported there can be none, and the threaded scheduler
    (which reads ``num_workers`` from dask's config as before) is the choice.
    """
    if "scheduler" in kwargs or "distributed" in sys.modules:
        return kwargs
    if dask.config.get("scheduler", None) not in (None, "threads", "threading"):
        return kwargs
    from dask.threaded import get as threaded

    return {**kwargs, "scheduler": threaded}


def compute(*collections: Any, **kwargs: Any) -> tuple:
    """``dask.compute`` with BLAS threads capped on the threaded scheduler."""
    kwargs = _threads_unless_asked(kwargs)
    with blas_limited():
        if _progress:
            return _compute_with_progress(collections, kwargs)
        return dask.compute(*collections, **kwargs)


def persist(collection: Any) -> Any:
    """``dask.persist`` of one collection on the scheduler :func:`compute` would use, BLAS capped as there.

    On a cluster the blocks stay in the workers' memory (futures); on threads, in this process.
    """
    kwargs = _threads_unless_asked({})
    with blas_limited():
        (out,) = dask.persist(collection, **kwargs)
    return out


_progress: str | None = None
#: Seconds between two progress lines (``progress("lines")``); dask config ``bigdr.progress-interval``.
LINE_INTERVAL = 10.0


@contextlib.contextmanager
def progress(mode: bool | str = True):
    """Report progress of every compute inside the block (threads or distributed).

    ``"bar"`` (or True): a bar redrawn in place, for a terminal. ``"lines"``:
    a plain line every 10 seconds, ``bigdr: 3,120 of 9,800 tasks (32%), 41 s``,
    and one when the compute ends, for logs, CI and notebooks, where a bar
    redrawn with carriage returns shows nothing or one long line. False: none.
    """
    global _progress
    if mode not in (True, False, "bar", "lines"):
        raise ValueError(f"progress must be 'bar', 'lines' or False; got {mode!r}.")
    previous, _progress = _progress, ("bar" if mode is True else (mode or None))
    try:
        yield
    finally:
        _progress = previous


@contextlib.contextmanager
def step(what: str, long: bool = True):
    """Report a long step outside dask's graphs (an eigendecomposition in the driver) while progress is on.

    One line when it starts and one with its time when it ends, so progress
    does not sit at 100% in silence while the driver works. ``long=False``
    (a step the caller expects to take well under a second) prints nothing.
    """
    if not (_progress and long):
        yield
        return
    print(f"bigdr: {what} ...", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    yield
    print(f"bigdr: {what}: {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)


def _line(done: int, total: int, elapsed: float, out: Any) -> None:
    pct = 100 * done // total if total else 100
    print(f"bigdr: {done:,} of {total:,} tasks ({pct}%), {elapsed:.0f} s", file=out, flush=True)


class _Lines(dask.callbacks.Callback):
    """Progress lines on dask's local schedulers."""

    def __init__(self, every: float, out: Any) -> None:
        super().__init__()
        self.every, self.out = every, out

    def _start_state(self, dsk: Any, state: dict) -> None:
        self.t0 = self.last = time.monotonic()

    def _posttask(self, key: Any, result: Any, dsk: Any, state: dict, worker_id: Any) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            done = len(state["finished"])
            _line(done, done + sum(len(state[k]) for k in ("ready", "waiting", "running")), now - self.t0, self.out)

    def _finish(self, dsk: Any, state: dict, errored: bool) -> None:
        if not errored and time.monotonic() - self.t0 >= self.every:
            done = len(state["finished"])
            _line(done, done, time.monotonic() - self.t0, self.out)


#: Seconds between two questions to a cluster's scheduler about a compute's progress (lines still come
#: every :data:`LINE_INTERVAL`): the answer is also how the compute learns it has ended.
POLL_INTERVAL = 0.1


def _distributed_lines(futures: list, every: float, out: Any) -> None:
    """Progress lines from a cluster's scheduler while ``futures`` compute.

    The scheduler answers every :data:`POLL_INTERVAL` seconds, and a line is
    printed at most every ``every`` seconds. (Asked only every ``every``
    seconds, the scheduler told of the end up to that long after it: the
    command line's PCA of 400,000 rows on a cluster, 0.4 s of work, took 40 s.)
    """
    from distributed.diagnostics.progressbar import TextProgressBar

    class Lines(TextProgressBar):
        printed = 0.0

        def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:  # noqa: A002 - distributed's name
            if remaining and self.elapsed - self.printed >= every:
                self.printed = self.elapsed
                _line(all - remaining, all, self.elapsed, out)

        def _draw_stop(self, remaining: int = 0, all: int = 0, status: str = "", **kwargs: Any) -> None:  # noqa: A002
            if status == "finished" and self.elapsed >= every:  # as on threads: a last line if any came before
                _line(all, all, self.elapsed, out)

    Lines(futures, interval=f"{min(every, POLL_INTERVAL)}s", complete=True)


def _compute_with_progress(collections, kwargs):
    every = float(dask.config.get("bigdr.progress-interval", LINE_INTERVAL))
    # A local scheduler asked for (rows already in this process checked here) runs here, client or not
    local = kwargs.get("scheduler") not in (None, "distributed", "dask.distributed")
    client = None if local else _distributed_client()
    if client is not None:
        from distributed import progress as distributed_progress

        futures = client.compute(list(collections), **kwargs)
        if _progress == "lines":
            _distributed_lines(futures, every, sys.stderr)
        else:
            distributed_progress(futures)
            print(file=sys.stderr)
        return tuple(client.gather(futures))
    if _progress == "lines":
        with _Lines(every, sys.stderr):
            return dask.compute(*collections, **kwargs)
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


#: Fitted pieces already scattered: object -> (client id, future); an entry goes when its object does.
_scattered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_key(obj: Any, name: str) -> Any:
    """A fitted model's piece that every task of a graph reads (an extension, an index), as one input.

    On a cluster it is scattered once per client (broadcast; distributed's
    memory manager may keep fewer copies and move one between workers when a
    task needs it), and later graphs reuse the future: it travels neither inside each graph
    (distributed warns from 10 MiB, e.g. 83 MiB for a diffusion map's
    extension of 100,000 landmarks in 50 dimensions, and the scheduler would
    hold it) nor again with each call. Otherwise it is one delayed key
    named ``name``.
    """
    client = _distributed_client()
    if client is None:
        return dask.delayed(obj, name=name, traverse=False)
    held = _scattered.get(obj)
    if held is None or held[0] != client.id or held[1].status != "finished":
        held = (client.id, client.scatter(obj, broadcast=True, hash=False))
        _scattered[obj] = held
    return held[1]


def parallelism() -> int:
    """How many tasks the current scheduler runs at once (worker threads in all)."""
    client = _distributed_client()
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # pragma: no cover - a client between connections
            return 1
    return local_threads()


def local_threads() -> int:
    """Threads of this process's own scheduler (dask's ``num_workers``, else the cores)."""
    import os

    return max(1, int(dask.config.get("num_workers", None) or os.cpu_count() or 1))
