"""Memory predicted before a fit, not discovered by the kernel's OOM killer.

Every estimator describes the peak memory of its fit as a sum of named
parts (:class:`MemoryEstimate`), computed from its parameters and the
input's shape, dtype and chunks alone; the constants are calibrated against
measured peaks (``benchmarks/bench_memory.py``). Before the first pass, the
estimate is compared with the memory the fit may use (:func:`memory_limit`):

* the dask config value ``bigdr.memory-limit`` (environment
  ``DASK_BIGDR__MEMORY_LIMIT``, command line ``--memory-limit``): a size such
  as ``"8GiB"``, ``"none"`` to turn the check off, or ``"auto"`` (default);
* ``"auto"``: the memory available now on this machine, and on a
  ``distributed`` cluster also the smallest worker's ``memory_limit``.

A fit whose estimate exceeds the limit is refused with a
:class:`~bigdr.exceptions.MemoryBudgetError` that names the part and the
parameter to change.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import dask

#: Resident memory of a compute beyond the parts: the task graph, scheduler
#: bookkeeping, thread pools and allocator slack (measured: 40-90 MiB).
OVERHEAD = 64 * 2**20


def format_bytes(n: float) -> str:
    """``1536 * 2**20`` -> ``"1.5 GiB"``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


class Part(NamedTuple):
    bytes: int
    what: str  #: what the memory holds, for the message
    param: str  #: the parameter that changes it ("" when only the data does)
    phase: str = ""  #: parts of different phases (passes run one after the other) do not add up; "" is held throughout


class MemoryEstimate(NamedTuple):
    """The predicted peak of a fit, by part."""

    owner: str
    parts: dict[str, Part]

    @property
    def total(self) -> int:
        held = sum(p.bytes for p in self.parts.values() if not p.phase)
        phases: dict[str, int] = {}
        for p in self.parts.values():
            if p.phase:
                phases[p.phase] = phases.get(p.phase, 0) + p.bytes
        return OVERHEAD + held + max(phases.values(), default=0)

    def largest(self) -> Part:
        return max(self.parts.values(), key=lambda p: p.bytes)

    def describe(self) -> str:
        shown = sorted(self.parts.values(), key=lambda p: -p.bytes)
        items = ", ".join(f"{p.what} {format_bytes(p.bytes)}" for p in shown if p.bytes >= 2**20)
        return f"about {format_bytes(self.total)}" + (f" ({items})" if items else "")


def streaming(
    chunk_bytes: int, copies: float, what: str = "row blocks in flight", phase: str = "pass", blocks: int | None = None
) -> Part:
    """Row blocks held at once by a streaming pass: ``copies`` per worker thread, at most the ``blocks`` there are."""
    from .compute import parallelism

    held = copies * parallelism()
    return Part(int(chunk_bytes * (held if blocks is None else min(held, max(int(blocks), 1)))), what, "", phase)


def memory_limit(in_driver: bool = False) -> tuple[int | None, str]:
    """The bytes a fit may use and where that figure comes from (None: unchecked).

    ``in_driver``: for memory held by this process only (a cluster's workers' limits do not apply).
    """
    from dask.utils import parse_bytes

    setting = dask.config.get("bigdr.memory-limit", "auto")
    if setting is None or (isinstance(setting, str) and setting.lower() in ("none", "off", "false")):
        return None, "no limit"
    if not (isinstance(setting, str) and setting == "auto"):
        try:
            return int(parse_bytes(setting) if isinstance(setting, str) else setting), "bigdr.memory-limit"
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"bigdr.memory-limit must be a size like '8GiB', 'none' or 'auto'; got {setting!r}."
            ) from exc
    limit, source = available_memory(), "available memory"
    worker = None if in_driver else _smallest_worker_limit()
    if worker is not None and worker < limit:
        limit, source = worker, "the smallest worker's memory limit"
    return limit, source


def available_memory() -> int:
    """Bytes of memory available to this process now (free and reclaimable, page cache included)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil comes with distributed
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def _smallest_worker_limit() -> int | None:
    from .compute import _distributed_client

    client = _distributed_client()
    if client is None:
        return None
    try:
        limits = [w.get("memory_limit") for w in client.scheduler_info()["workers"].values()]
    except Exception:  # pragma: no cover - a client between connections
        return None
    limits = [int(x) for x in limits if x]
    return min(limits) if limits else None


def check_memory(estimate: MemoryEstimate, in_driver: bool = False) -> None:
    """Refuse, before any work, a fit whose estimate exceeds :func:`memory_limit`.

    ``in_driver``: the estimate is of memory this process holds (compared with this machine's).
    """
    from ..exceptions import MemoryBudgetError

    limit, source = memory_limit(in_driver)
    if limit is None or estimate.total <= limit:
        return
    part = estimate.largest()
    fix = f"lower {part.param}, or " if part.param else "use a machine or workers with more memory, or "
    raise MemoryBudgetError(
        f"{estimate.owner} would need {estimate.describe()}, more than the {format_bytes(limit)} of {source}; "
        f"{fix}set bigdr.memory-limit='none' (command line: --memory-limit none) to run anyway."
    )
