"""Choosing where graphs run: one option for the CLI, one context manager for Python.

``spec`` is one of

* ``"threads"`` (default): dask's threaded scheduler in this process;
* ``"local-cluster"``: a ``distributed.LocalCluster`` of worker processes on
  this machine, started for the block and closed after it;
* an address such as ``tcp://10.0.0.5:8786``, or the path of a scheduler file
  written by ``dask scheduler --scheduler-file``: an existing cluster.

The environment variable ``BIGDR_SCHEDULER`` sets the default. Library code
never looks at this: it builds graphs and calls :func:`bigdr._compute.compute`,
which runs them on whatever is active.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import dask

ENV = "BIGDR_SCHEDULER"


def default_spec() -> str:
    return os.environ.get(ENV, "threads") or "threads"


@contextlib.contextmanager
def use_scheduler(spec: str | None = None, *, n_workers: int | None = None) -> Iterator[object | None]:
    """Run the enclosed dask work on ``spec``; yields the ``distributed.Client`` or None."""
    spec = spec or default_spec()
    if spec in ("threads", "threaded", "sync", "synchronous"):
        with dask.config.set(scheduler="sync" if spec.startswith("sync") else "threads"):
            yield None
        return
    from distributed import Client, LocalCluster

    if spec in ("local-cluster", "local"):
        workers = n_workers or max(1, min(os.cpu_count() or 1, 4))
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    if "://" in spec or ":" in spec:
        address = spec
        kwargs = {"address": address}
    elif os.path.exists(spec):
        kwargs = {"scheduler_file": spec}
    else:
        raise ValueError(
            f"Unknown scheduler {spec!r}: use 'threads', 'local-cluster', an address like "
            f"tcp://host:8786, or the path of a scheduler file."
        )
    try:
        client = Client(timeout="10s", **kwargs)
    except OSError as exc:
        raise ValueError(f"Cannot reach the dask scheduler at {spec!r}: {exc}. Is it running?") from exc
    with client:
        yield client
