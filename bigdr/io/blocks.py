"""Writing row blocks of dask arrays into zarr arrays, one marker per block.

Shared by :mod:`bigdr.io.write` (new stores) and :mod:`bigdr.io.append`
(growing stores): each written block leaves an empty file named by its first
row, so an interrupted write resumes with only the blocks still missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np


def json_safe(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


#: Inside a partial store: one empty file per row block written (its first row).
DONE_DIR = ".bigdr-done"


#: zarr's local store writes each chunk to ``<key>.<random>.partial`` and renames it;
#: a process killed mid-write leaves that file behind.
UNFINISHED_SUFFIX = ".partial"


def drop_unfinished(directory: Path) -> None:
    """Remove the temporary files of chunk writes a killed process left in ``directory`` (bigdr's own staging)."""
    for f in Path(directory).rglob("*" + UNFINISHED_SUFFIX):
        if f.is_file():
            f.unlink()


def _write_row_block(
    start: np.ndarray, *blocks: np.ndarray, targets: list, done_dir: Path | None, offset: int = 0
) -> np.ndarray:
    first = int(start[0])
    for block, target in zip(blocks, targets):
        target[offset + first : offset + first + len(block)] = block
    if done_dir is not None:
        (Path(done_dir) / str(first)).touch()
    return np.zeros(1)


def store_together(
    sources: list[da.Array],
    targets: list,
    done_dir: Path | None = None,
    done: set[int] | None = None,
    offset: int = 0,
):
    """A graph writing ``sources`` into ``targets``; returns something to compute.

    When every source has the same row chunks and one chunk along the other
    axes, a single task per row block writes that block of every source. Outputs
    that share an upstream result (a neighbour query's indices and distances)
    then release it as soon as it is written; as separate store tasks dask held
    such results for many blocks (peak memory grew with n: 558 MiB at 1M rows,
    940 MiB at 10M, measured). Each written block leaves a marker in
    ``done_dir``; blocks whose first row is in ``done`` are left out of the
    graph, with everything only they need (resuming computes only the rest).
    Row ``i`` of the sources goes to row ``offset + i`` of the targets.
    """
    rows: Any = sources[0].chunks[0] if sources and sources[0].ndim else None
    aligned = rows is not None and all(
        s.ndim >= 1 and s.chunks[0] == rows and all(len(c) == 1 for c in s.chunks[1:]) for s in sources
    )
    if not aligned:
        regions = [tuple([slice(offset, offset + s.shape[0])] + [slice(None)] * (s.ndim - 1)) for s in sources]
        return da.store(sources, targets, lock=False, compute=False, regions=regions)
    letters = "jklmnopqrstuvwxyz"
    first_rows = np.cumsum((0,) + rows[:-1])
    starts = da.from_array(first_rows, chunks=1)
    # Distinct letters per source: their other axes need not agree in size.
    args = [starts, "i"]
    pos = 0
    for s in sources:
        index = "i" + letters[pos : pos + s.ndim - 1]
        pos += s.ndim - 1
        args += [s, index]
    written = da.blockwise(
        _write_row_block,
        "i",
        *args,
        targets=targets,
        done_dir=done_dir,
        offset=offset,
        concatenate=True,
        align_arrays=False,
        adjust_chunks={"i": 1},
        dtype=float,
        meta=np.empty((0,)),
    )
    missing = [b for b, r in enumerate(first_rows) if int(r) not in (done or set())]
    if len(missing) < len(first_rows):
        if not missing:
            return da.zeros(1)
        written = da.concatenate([written.blocks[b] for b in missing])
    return written.sum()


def compute_also(graph: Any, also: dict[str, Any] | None) -> None:
    """Compute ``graph`` and the values of ``also`` in one pass; ``also``'s values become their results."""
    from ..runtime.compute import compute

    names = list(also or {})
    results = compute(graph, *(also[n] for n in names)) if also else compute(graph)
    for name, value in zip(names, results[1:]):
        also[name] = value  # type: ignore[index]
