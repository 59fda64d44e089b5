"""Writing: atomic, resumable zarr stores.

A store is written under a hidden name beside its destination and renamed
into place when complete, so a reader never sees a half-written store.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from .._version import __version__
from .blocks import DONE_DIR, compute_also, drop_unfinished, json_safe, store_together
from .outputs import check_output, publish
from .read import source_paths

#: Errors after which a partial store is worth keeping for ``resume``: the
#: run was interrupted (Ctrl-C, lost workers or scheduler, I/O), not wrong.
_KEEP_PARTIAL_ON = (KeyboardInterrupt, OSError, TimeoutError)


def partial_path(path: str | os.PathLike) -> Path:
    """Where an interrupted :func:`write_zarr` of ``path`` leaves its partial store."""
    final = Path(path)
    return final.with_name(f".{final.name}.partial")


def _fingerprint(attrs: dict, items: dict) -> str:
    import hashlib

    desc = {k: [list(a.shape), str(a.dtype), [list(c) for c in a.chunks]] for k, a in items.items()}
    return hashlib.sha256(json.dumps([attrs, desc], sort_keys=True, default=str).encode()).hexdigest()


def write_zarr(
    arrays: da.Array | np.ndarray | dict[str, da.Array | np.ndarray],
    path: str | os.PathLike,
    *,
    attrs: dict | None = None,
    overwrite: bool = False,
    chunk_rows: int | None = None,
    resume: bool = False,
    append: bool = False,
    also: dict[str, Any] | None = None,
    compressors: Any = "auto",
) -> Path:
    """Write one array, or a group of named arrays, to a zarr (v3) store atomically and resumably.

    The store is written under the hidden name ``.<name>.partial`` beside
    ``path`` and renamed into place only when every chunk is written, so a
    reader never sees a half-written store under ``path``.

    Each row block, once written, leaves a marker in the partial store. If
    the run is interrupted (Ctrl-C, lost workers or scheduler, a killed
    process), the partial store stays; ``resume=True`` then reopens it,
    checks that it belongs to the same output (attributes, shapes, dtypes
    and chunks, by a fingerprint), computes and writes only the row blocks
    without a marker, and publishes a store identical to an uninterrupted
    run's. Without ``resume`` a stale partial store is discarded. A
    ``ValueError`` or ``TypeError`` during the write (bad data) removes the
    partial store: resuming would not help.

    Parameters
    ----------
    arrays : array or dict of name -> array
        A single array makes an array store; a dict makes a group (the first
        entry is the main array; :func:`as_array` reads ``"X"`` by default).
    path : str or Path
        Local destination directory.
    attrs : dict, optional
        JSON-serialisable attributes; ``bigdr_version`` is added. For a group
        they go on the group and on every array.
    overwrite : bool
        Replace an existing store (also atomically).
    chunk_rows : int, optional
        Rows per stored chunk; default: the dask chunking.
    resume : bool
        Continue an interrupted write of the same output.
    append : bool
        When ``path`` exists, add the rows to it instead
        (:func:`bigdr.io.append.append_zarr`: atomic, resumable, recorded in
        the store's ``bigdr_appends`` attribute); otherwise write it as new.
        Appended rows keep the store's own codecs.
    also : dict of name -> lazy value, optional
        Computed in the same pass as the store (a statistic of the same
        graph, such as a drift count); each value is replaced by its result.
    compressors : "auto", None or zarr codec(s)
        zarr's ``compressors`` for the new arrays: ``"auto"`` is zarr's
        default (zstd); ``None`` stores the raw bytes. Dense float data such
        as embeddings barely compress (zstd keeps about 93% of the bytes of
        768-wide unit rows) while decoding them costs processor time on every
        read; stored raw, a pass over a store larger than memory is bound by
        the disk alone (the measurement is in the wide-data section of the
        PCA documentation).

    Returns
    -------
    pathlib.Path
        The final path.
    """
    import zarr

    if append and Path(path).exists():
        from .append import append_zarr

        return append_zarr(arrays, path, resume=resume, also=also)
    single = not isinstance(arrays, dict)
    items = {"": arrays} if single else dict(arrays)
    inputs = [p for a in items.values() for p in source_paths(a)]
    final = check_output(path, "store", overwrite=overwrite, inputs=inputs)
    attrs = json_safe({**(attrs or {}), "bigdr_version": __version__})
    tmp = partial_path(final)
    prepared = {}
    for key, arr in items.items():
        arr = arr if isinstance(arr, da.Array) else da.from_array(np.asarray(arr))
        if chunk_rows is not None and arr.ndim >= 1:
            arr = arr.rechunk({0: min(chunk_rows, max(arr.shape[0], 1))})
        # zarr chunks must be regular: use the first dask chunk along each axis.
        chunks = tuple(max(c[0], 1) for c in arr.chunks) if arr.ndim else ()
        if arr.ndim and any(len(set(c[:-1])) > 1 or (len(c) > 1 and c[-1] > c[0]) for c in arr.chunks):
            arr = arr.rechunk(chunks)
        prepared[key] = arr
    fingerprint = _fingerprint({**attrs, "compressors": repr(compressors)}, prepared)
    done: set[int] = set()
    if tmp.exists():
        if resume and _partial_fingerprint(tmp) == fingerprint:
            done = {int(f.name) for f in (tmp / DONE_DIR).iterdir() if f.name.isdigit()}
        elif resume:
            raise ValueError(
                f"The partial store {tmp} was written by a different run (its parameters, input or shapes "
                f"differ), so it cannot be resumed. Remove it, or run without --resume to start again."
            )
        else:
            shutil.rmtree(tmp)
    try:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)
            if single:
                (arr,) = prepared.values()
                zarr.create_array(
                    str(tmp),
                    shape=arr.shape,
                    chunks=tuple(max(c[0], 1) for c in arr.chunks) or (),
                    dtype=arr.dtype,
                    attributes=attrs,
                    compressors=compressors,
                    config=_COMPLETE,
                )
            else:
                root = zarr.open_group(str(tmp), mode="w", attributes=attrs)
                for key, arr in prepared.items():
                    root.create_array(
                        key,
                        shape=arr.shape,
                        chunks=tuple(max(c[0], 1) for c in arr.chunks),
                        dtype=arr.dtype,
                        attributes=attrs,
                        compressors=compressors,
                        config=_COMPLETE,
                    )
            (tmp / DONE_DIR).mkdir()
            (tmp / DONE_DIR / "fingerprint").write_text(fingerprint)
        with zarr.config.set({"array.write_empty_chunks": True}):  # kept by the array objects sent to workers
            node: Any = zarr.open(str(tmp), mode="r+")
            targets = [node] if single else [node[key] for key in prepared]
        compute_also(store_together(list(prepared.values()), targets, tmp / DONE_DIR, done), also)
        shutil.rmtree(tmp / DONE_DIR)
        drop_unfinished(tmp)  # an interrupted run's half-written chunk files
        publish(tmp, final, overwrite)
    except BaseException as exc:
        if not _interrupted(exc):
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            note = getattr(exc, "add_note", None)  # Python 3.11+
            if note is not None:
                note(
                    f"The blocks written so far are kept in {tmp}: write again with resume=True (command line: "
                    f"--resume) to finish, or remove that directory."
                )
        raise
    return final


#: Every chunk is written, even one equal to the fill value, so that a missing
#: chunk file always means damage (see :func:`bigdr.io.read.zarr_source`).
_COMPLETE: Any = {"write_empty_chunks": True}


def _partial_fingerprint(tmp: Path) -> str | None:
    try:
        return (tmp / DONE_DIR / "fingerprint").read_text()
    except OSError:
        return None


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` means the run was cut short (lost workers, cancelled), not bad data."""
    if isinstance(exc, (ValueError, TypeError)):
        return False
    name = type(exc).__name__
    return name in ("KilledWorker", "CancelledError", "CommClosedError", "FutureCancelledError") or isinstance(
        exc, _KEEP_PARTIAL_ON
    )


def read_attrs(path: str | os.PathLike) -> dict:
    """Attributes of a zarr array or group (for ``bigdr info``)."""
    import zarr

    node = zarr.open(str(path), mode="r")
    return dict(node.attrs)
