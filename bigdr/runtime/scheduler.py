"""Choosing where graphs run: one option for the CLI, one context manager for Python.

``spec`` is one of

* ``"threads"`` (default): dask's threaded scheduler in this process;
* ``"local-cluster"``: a ``distributed.LocalCluster`` of worker processes on
  this machine, started for the block and closed after it;
* an address such as ``tcp://10.0.0.5:8786``, or the path of a scheduler file
  written by ``dask scheduler --scheduler-file``: an existing cluster.

The environment variable ``BIGDR_SCHEDULER`` sets the default. Library code
never looks at this: it builds graphs and calls :func:`bigdr.runtime.compute.compute`,
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


def _guarded_lines(source: str) -> list[range]:
    """Line ranges of the ``if __name__ == "__main__":`` blocks of a module's source."""
    import ast

    ranges = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            texts = {ast.unparse(n).strip("'\"") for n in names}
            if texts == {"__name__", "__main__"}:
                ranges.append(range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1))
    return ranges


def check_main_guard() -> None:
    """Refuse to start worker processes from the unguarded top level of a script.

    Worker processes start by ``spawn`` (dask's default), which re-imports the
    main script; without an ``if __name__ == "__main__":`` guard every worker
    would run the script again and try to start a cluster of its own, ending
    in "Nanny failed to start" and pages of tracebacks. The running script's
    top-level frame tells whether the call comes from inside the guard.
    """
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or not os.path.isfile(path):
        return  # interactive, python -c, notebooks: nothing is re-imported
    import multiprocessing

    if multiprocessing.parent_process() is not None and getattr(main, "__name__", "") == "__mp_main__":
        raise RuntimeError(
            f"{path} starts a cluster while being re-imported by a worker process; put the code that uses "
            f'use_scheduler("local-cluster") under if __name__ == "__main__":'
        )
    frame = sys._getframe(1)
    top = None
    while frame is not None:
        if frame.f_code.co_name == "<module>" and os.path.abspath(frame.f_code.co_filename) == os.path.abspath(path):
            top = frame
        frame = frame.f_back  # type: ignore[assignment]
    if top is None:
        return  # called from elsewhere (a test runner, an entry point)
    try:
        with open(path, encoding="utf-8") as fh:
            guarded = _guarded_lines(fh.read())
    except (OSError, SyntaxError, ValueError):
        return
    if not any(top.f_lineno in r for r in guarded):
        raise RuntimeError(
            f'{os.path.basename(path)}, line {top.f_lineno}: use_scheduler("local-cluster") at the top level of a '
            f'script needs the script\'s code under if __name__ == "__main__": (worker processes re-import the '
            f"script); indent it under that line."
        )


@contextlib.contextmanager
def use_scheduler(spec: str | None = None, *, n_workers: int | None = None) -> Iterator[object | None]:
    """Run the enclosed dask work on ``spec``; yields the ``distributed.Client`` or None.

    A scheduler address that does not answer within dask config ``bigdr.connect-timeout``
    (default 10 s) is a :class:`ValueError`.
    """
    spec = spec or default_spec()
    if spec in ("threads", "threaded", "sync", "synchronous"):
        with dask.config.set(scheduler="sync" if spec.startswith("sync") else "threads"):
            yield None
        return
    from distributed import Client, LocalCluster

    if spec in ("local-cluster", "local"):
        check_main_guard()
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
        client = Client(timeout=dask.config.get("bigdr.connect-timeout", "10s"), **kwargs)
    except OSError as exc:
        raise ValueError(f"Cannot reach the dask scheduler at {spec!r}: {exc}. Is it running?") from exc
    with client:
        yield client
