"""Data layer: turn anything array-like into a validated, row-chunked dask array,
and write dask arrays to zarr stores atomically.

Every estimator calls :func:`as_array` at its boundary, so the rules for input
live here and only here.
"""

from __future__ import annotations

import json
import operator
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from ._version import __version__

#: Target size of one dask chunk. Large enough that per-task overhead (about
#: 1 ms) is noise beside the BLAS work, small enough that a few chunks per
#: worker thread fit comfortably in memory.
DEFAULT_CHUNK_BYTES = 128 * 2**20

#: Rows narrower than this many bytes keep all their columns in one chunk.
#: Wider data (p > 65536 float64) keeps column chunks; the randomized solver
#: and random projection work on both axes.
MAX_FULL_ROW_BYTES = 512 * 2**10


def chunk_budget(cap: int | None = None) -> int:
    """Bytes per input chunk: the dask config value ``bigdr.chunk-bytes`` (environment
    ``DASK_BIGDR__CHUNK_BYTES``; command line ``--chunk-mib``), default 128 MiB, and at
    most ``cap`` when a pass asks for smaller chunks."""
    import dask

    configured = int(dask.config.get("bigdr.chunk-bytes", DEFAULT_CHUNK_BYTES))
    if configured < 1:
        raise ValueError(f"bigdr.chunk-bytes must be positive; got {configured}.")
    return min(configured, cap) if cap is not None else configured


def _float_dtype(dtype: np.dtype, name: str) -> np.dtype:
    """The floating dtype bigdr computes in for input of ``dtype``."""
    if dtype.kind == "f":
        # float16 has too little precision for sums over millions of rows.
        return np.dtype(np.float32) if dtype.itemsize <= 4 else np.dtype(np.float64)
    if dtype.kind in "iub":
        return np.dtype(np.float64)
    if dtype.kind == "c":
        raise TypeError(
            f"{name} has complex dtype {dtype}; bigdr works on real data. "
            f"Pass the real and imaginary parts as separate columns."
        )
    raise TypeError(
        f"{name} has non-numeric dtype {dtype}; convert it to a numeric array "
        f"(for example with .astype('float64')) first."
    )


def _check_block_finite(block: np.ndarray) -> np.ndarray:
    # A sum is NaN/Inf when any entry is; only then (or on overflow of huge
    # finite values) pay for the element-wise test.
    with np.errstate(over="ignore", invalid="ignore"):
        total = block.sum()
    if not np.isfinite(total):
        bad = ~np.isfinite(block)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ValueError(
                f"Input contains NaN or infinity (first in this chunk at local row "
                f"{row}, column {col}). Remove or impute non-finite values before "
                f"fitting, for example with numpy.nan_to_num or a dask-ml imputer."
            )
    return block


def _row_chunks(n: int, row_bytes: int, chunk_bytes: int, base: int | None) -> tuple[int, ...]:
    rows = max(1, chunk_bytes // max(row_bytes, 1))
    if base:
        # Align with the storage chunks so no stored chunk is read twice.
        rows = max(base, (rows // base) * base)
    rows = min(rows, n)
    full, rest = divmod(n, rows)
    return (rows,) * full + ((rest,) if rest else ())


def _from_numpy(X: np.ndarray, row_chunks: tuple[int, ...]) -> da.Array:
    """A dask array whose chunks are views of ``X``: no copy, no hashing.

    ``da.from_array`` copies its input and hashes it to name the keys; for
    1M x 100 float64 that is 0.4-0.6 s before any work (measured), more than
    the PCA fit itself. The caller must not modify ``X`` while a lazy result
    built from it is alive (estimators compute numpy input immediately).
    """
    from dask.highlevelgraph import HighLevelGraph

    name = f"bigdr-numpy-{uuid.uuid4().hex}"
    source = f"{name}-source"
    dsk: dict = {source: X}
    bounds = np.cumsum((0,) + tuple(row_chunks))
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        dsk[(name, i, 0)] = (operator.getitem, source, (slice(int(a), int(b)), slice(None)))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, (tuple(row_chunks), (X.shape[1],)), meta=X[:0, :0])


def _open_path(path: str, *, dataset: str | None, storage_options: dict | None) -> Any:
    lower = path.lower().rstrip("/")
    if lower.endswith(".npy"):
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such .npy file: {path!r}")
        return np.load(path, mmap_mode="r", allow_pickle=False)
    if lower.endswith((".h5", ".hdf5", ".hdf")) or ".h5:" in lower or ".hdf5:" in lower:
        import h5py

        if dataset is None and ":" in path.split("://")[-1]:
            path, dataset = path.rsplit(":", 1)
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such HDF5 file: {path!r}")
        f = h5py.File(path, "r")
        if dataset is None:
            names = [k for k in f if isinstance(f[k], h5py.Dataset)]
            if len(names) != 1:
                raise ValueError(
                    f"HDF5 file {path!r} holds datasets {names}; name the one to use "
                    f"as 'file.h5:/name' or with dataset='name'."
                )
            dataset = names[0]
        return f[dataset]
    return open_zarr(path, dataset=dataset, storage_options=storage_options)


def open_zarr(path: str, *, dataset: str | None = None, storage_options: dict | None = None):
    """Open a zarr array (format 2 or 3) at a local path or fsspec URL.

    A group is accepted when it holds an array named ``X`` (the layout bigdr's
    generators write) or exactly one array, or when ``dataset`` names one.
    """
    import zarr

    is_url = "://" in path
    if not is_url and not os.path.exists(path):
        raise FileNotFoundError(f"No such zarr store: {path!r}")
    try:
        node = zarr.open(path, mode="r", storage_options=storage_options)
    except Exception as exc:  # zarr raises several types for "not a store"
        raise ValueError(f"{path!r} is not a readable zarr store: {exc}") from exc
    if isinstance(node, zarr.Array):
        return node
    names = sorted(node.array_keys())
    if dataset is None:
        if "X" in names:
            dataset = "X"
        elif len(names) == 1:
            dataset = names[0]
        else:
            raise ValueError(
                f"zarr group {path!r} holds arrays {names}; name the one to use "
                f"with dataset='name' (command line: --dataset name)."
            )
    if dataset not in names:
        raise ValueError(f"zarr group {path!r} has no array {dataset!r}; it holds {names}.")
    return node[dataset]


def as_array(
    X: Any,
    *,
    name: str = "X",
    dataset: str | None = None,
    storage_options: dict | None = None,
    chunk_bytes: int | None = None,
    min_rows: int = 2,
    check_finite: bool = True,
    extra_row_bytes: int = 0,
    keep_column_chunks: bool = False,
) -> da.Array:
    """Turn array-like input into a validated dask array chunked by rows.

    Parameters
    ----------
    X : numpy array, dask array, zarr array, h5py dataset or str/Path
        A path may name a zarr store (format 2 or 3, local or fsspec URL), a
        ``.npy`` file (memory-mapped) or an HDF5 file (``file.h5:/dataset``).
    name : str
        Name used in error messages.
    dataset : str, optional
        Array inside a zarr group or HDF5 file.
    storage_options : dict, optional
        Passed to fsspec for remote zarr stores.
    chunk_bytes : int, optional
        Target bytes per chunk: default :func:`chunk_budget` (128 MiB unless
        configured smaller, e.g. for workers with little memory). Row chunks are aligned with
        storage chunks. Rows narrower than 512 KiB keep all columns in one
        chunk (column-chunked input is rechunked); wider rows keep their
        column chunks.
    min_rows : int
        Fewest rows accepted.
    check_finite : bool
        Check for NaN/Inf lazily, inside the first pass over the data (no extra
        pass): the error is raised when the result is computed.
    extra_row_bytes : int
        Bytes per row that the consumer produces or holds besides the row
        itself (a neighbour query's k indices and distances, say). Counted in
        the chunk size, so a block's output, not only its input, stays within
        ``chunk_bytes``.
    keep_column_chunks : bool
        Keep the column chunks of column-chunked input whatever the row width
        (for consumers that work block by block along both axes).

    Returns
    -------
    dask.array.Array
        Two-dimensional, floating (integers become float64, float32 stays
        float32), chunked by rows.
    """
    chunk_bytes = chunk_budget(chunk_bytes)
    base = None
    if isinstance(X, (str, Path)):
        X = _open_path(str(X), dataset=dataset, storage_options=storage_options)
    try:
        import zarr

        is_zarr = isinstance(X, zarr.Array)
    except ImportError:  # pragma: no cover
        is_zarr = False
    if isinstance(X, da.Array):
        arr = X
        base = None
    elif is_zarr:
        base = X.chunks[0] if X.ndim >= 1 else None
        arr = da.from_zarr(X, chunks=X.chunks)
    elif hasattr(X, "shape") and hasattr(X, "dtype") and not isinstance(X, np.ndarray) and type(X).__module__.startswith("h5py"):
        base = X.chunks[0] if X.chunks else None
        arr = da.from_array(X, chunks=X.chunks or "auto", lock=True)
    else:
        if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
            raise TypeError(
                f"{name} is a scipy.sparse matrix; this method needs dense input. "
                f"Densify row blocks (dask.array.map_blocks(lambda b: b.toarray())) first."
            )
        if not isinstance(X, np.ndarray):
            try:
                X = np.asarray(X)
            except Exception as exc:
                raise TypeError(f"{name} could not be read as an array: {exc}") from exc
        if X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1 and X.dtype.kind in "biuf":
            itemsize = _float_dtype(X.dtype, name).itemsize
            arr = _from_numpy(X, _row_chunks(X.shape[0], X.shape[1] * itemsize + extra_row_bytes, chunk_bytes, None))
        else:  # invalid input: let the checks below name the problem
            arr = da.from_array(X, chunks=X.shape or 1, name=False)

    if arr.ndim != 2:
        hint = " Reshape a single feature with X.reshape(-1, 1) or a single sample with X.reshape(1, -1)." if arr.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D (samples x features); got {arr.ndim}-D with shape {arr.shape}.{hint}")
    n, p = arr.shape
    if any(np.isnan(s) for s in arr.shape):
        raise ValueError(f"{name} has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    if p < 1:
        raise ValueError(f"{name} has 0 columns (shape {arr.shape}); at least one feature is needed.")
    if n < min_rows:
        raise ValueError(f"{name} has {n} row(s) (shape {arr.shape}); at least {min_rows} are needed.")
    dtype = _float_dtype(arr.dtype, name)
    if arr.dtype != dtype:
        arr = arr.astype(dtype)

    row_bytes = p * dtype.itemsize
    if row_bytes <= MAX_FULL_ROW_BYTES and not keep_column_chunks:
        col_chunks: Any = (p,)
    else:
        col_chunks = arr.chunks[1]
        row_bytes = max(col_chunks) * dtype.itemsize
    row_bytes += extra_row_bytes
    if base is None and len(arr.chunks[0]) > 1 and arr.chunks[1] == (p,):
        # A dask array already chunked sensibly by rows is kept as it is.
        sizes = np.asarray(arr.chunks[0]) * row_bytes
        if sizes.max() <= 4 * chunk_bytes and np.median(sizes) >= chunk_bytes / 16:
            row_chunks = arr.chunks[0]
        else:
            row_chunks = _row_chunks(n, row_bytes, chunk_bytes, None)
    else:
        row_chunks = _row_chunks(n, row_bytes, chunk_bytes, base)
    if (row_chunks, tuple(col_chunks)) != arr.chunks:
        arr = arr.rechunk((row_chunks, col_chunks))
    return with_finite_check(arr) if check_finite else arr


def with_finite_check(arr: da.Array) -> da.Array:
    """Add the lazy NaN/Inf check to every block of ``arr`` (fused into the next pass)."""
    return arr.map_blocks(_check_block_finite, dtype=arr.dtype, name=f"bigdr-check-finite-{arr.name}")


def _json_safe(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def _temporary_sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:12]}")


def _publish(tmp: Path, final: Path, overwrite: bool) -> None:
    """Move a complete store from ``tmp`` to ``final`` by renames only."""
    if final.exists():
        if not overwrite:
            raise FileExistsError(f"{final} already exists; pass overwrite=True (command line: --overwrite) to replace it.")
        trash = _temporary_sibling(final)
        os.rename(final, trash)
        os.rename(tmp, final)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.rename(tmp, final)


def check_writable(path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Fail early, before any work, if ``path`` cannot be written."""
    if "://" in str(path):
        raise ValueError(
            f"Writing to URLs ({path!r}) is not supported: atomic publication needs a "
            f"local or mounted file system. Write locally and copy the finished store."
        )
    final = Path(path)
    if final.exists() and not overwrite:
        raise FileExistsError(f"{final} already exists; pass overwrite=True (command line: --overwrite) to replace it.")
    if not final.parent.exists():
        raise FileNotFoundError(f"Directory {final.parent} does not exist; create it first.")
    return final


#: Inside a partial store: one empty file per row block written (its first row).
DONE_DIR = ".bigdr-done"
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

    Returns
    -------
    pathlib.Path
        The final path.
    """
    import zarr

    from ._compute import compute as _compute

    final = check_writable(path, overwrite)
    attrs = _json_safe({**(attrs or {}), "bigdr_version": __version__})
    tmp = partial_path(final)
    single = not isinstance(arrays, dict)
    items = {"": arrays} if single else dict(arrays)
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
    fingerprint = _fingerprint(attrs, prepared)
    done: set[int] = set()
    if tmp.exists():
        if resume and _partial_fingerprint(tmp) == fingerprint:
            done = {int(f.name) for f in (tmp / DONE_DIR).iterdir() if f.name.isdigit()}
        elif resume:
            raise ValueError(
                f"The partial store {tmp} was written by a different run (its parameters, input or shapes "
                f"differ), so it cannot be resumed. Remove it, or run without --resume to start again.")
        else:
            shutil.rmtree(tmp)
    try:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)
            if single:
                (arr,) = prepared.values()
                zarr.create_array(str(tmp), shape=arr.shape, chunks=tuple(max(c[0], 1) for c in arr.chunks) or (),
                                  dtype=arr.dtype, attributes=attrs)
            else:
                root = zarr.open_group(str(tmp), mode="w", attributes=attrs)
                for key, arr in prepared.items():
                    root.create_array(key, shape=arr.shape, chunks=tuple(max(c[0], 1) for c in arr.chunks),
                                      dtype=arr.dtype, attributes=attrs)
            (tmp / DONE_DIR).mkdir()
            (tmp / DONE_DIR / "fingerprint").write_text(fingerprint)
        node = zarr.open(str(tmp), mode="r+")
        targets = [node] if single else [node[key] for key in prepared]
        _compute(_store_together(list(prepared.values()), targets, tmp / DONE_DIR, done))
        shutil.rmtree(tmp / DONE_DIR)
        _publish(tmp, final, overwrite)
    except _KEEP_PARTIAL_ON:
        raise
    except BaseException as exc:
        if not _interrupted(exc):
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


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
        exc, _KEEP_PARTIAL_ON)


def _write_row_block(start: np.ndarray, *blocks: np.ndarray, targets: list, done_dir: Path | None) -> np.ndarray:
    first = int(start[0])
    for block, target in zip(blocks, targets):
        target[first : first + len(block)] = block
    if done_dir is not None:
        (Path(done_dir) / str(first)).touch()
    return np.zeros(1)


def _store_together(sources: list[da.Array], targets: list, done_dir: Path | None = None,
                    done: set[int] | None = None):
    """A graph writing ``sources`` into ``targets``; returns something to compute.

    When every source has the same row chunks and one chunk along the other
    axes, a single task per row block writes that block of every source. Outputs
    that share an upstream result (a neighbour query's indices and distances)
    then release it as soon as it is written; as separate store tasks dask held
    such results for many blocks (peak memory grew with n: 558 MiB at 1M rows,
    940 MiB at 10M, measured). Each written block leaves a marker in
    ``done_dir``; blocks whose first row is in ``done`` are left out of the
    graph, with everything only they need (resuming computes only the rest).
    """
    rows = sources[0].chunks[0] if sources and sources[0].ndim else None
    aligned = rows is not None and all(
        s.ndim >= 1 and s.chunks[0] == rows and all(len(c) == 1 for c in s.chunks[1:]) for s in sources
    )
    if not aligned:
        return da.store(sources, targets, lock=False, compute=False)
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
    written = da.blockwise(_write_row_block, "i", *args, targets=targets, done_dir=done_dir, concatenate=True,
                           align_arrays=False, adjust_chunks={"i": 1}, dtype=float, meta=np.empty((0,)))
    missing = [b for b, r in enumerate(first_rows) if int(r) not in (done or set())]
    if len(missing) < len(first_rows):
        if not missing:
            return da.zeros(1)
        written = da.concatenate([written.blocks[b] for b in missing])
    return written.sum()


def read_attrs(path: str | os.PathLike) -> dict:
    """Attributes of a zarr array or group (for ``bigdr info``)."""
    import zarr

    node = zarr.open(str(path), mode="r")
    return dict(node.attrs)


# -- sparse (CSR) stores ----------------------------------------------------------
SPARSE_FORMAT = "bigdr-csr"


def write_sparse_zarr(blocks: Any, path: str | os.PathLike, n_features: int | None = None, *,
                      overwrite: bool = False, chunk_nnz: int = 1 << 22) -> Path:
    """Write a CSR matrix, or an iterable of CSR row blocks, to a zarr group atomically.

    The group holds ``indptr`` (int64), ``indices`` (int32 or int64) and
    ``data``, with ``{"format": "bigdr-csr", "shape": [n, p]}`` in its
    attributes; blocks are appended as they come, so a matrix larger than
    memory can be written from a generator.
    """
    import scipy.sparse as sp
    import zarr

    if sp.issparse(blocks):
        n_features = blocks.shape[1]
        blocks = [sp.csr_matrix(blocks)]
    if n_features is None:
        raise ValueError("n_features is needed when blocks is an iterable of row blocks.")
    final = check_writable(path, overwrite)
    tmp = _temporary_sibling(final)
    try:
        group = zarr.open_group(str(tmp), mode="w")
        index_dtype = np.int32 if n_features < 2**31 else np.int64
        made = None
        indptr_parts, nnz, rows = [np.zeros(1, np.int64)], 0, 0
        for block in blocks:
            block = sp.csr_matrix(block)
            if block.shape[1] != n_features:
                raise ValueError(f"A block has {block.shape[1]} columns; expected {n_features}.")
            if made is None:
                made = {name: group.create_array(name, shape=(0,), chunks=(chunk_nnz,), dtype=dt)
                        for name, dt in (("data", block.dtype), ("indices", index_dtype))}
            m = block.nnz
            for name, values in (("data", block.data), ("indices", block.indices.astype(index_dtype))):
                made[name].resize((nnz + m,))
                made[name][nnz : nnz + m] = values
            indptr_parts.append(block.indptr[1:].astype(np.int64) + nnz)
            nnz += m
            rows += block.shape[0]
        if made is None:
            raise ValueError("No rows to write.")
        indptr = np.concatenate(indptr_parts)
        group.create_array("indptr", shape=indptr.shape, chunks=(min(len(indptr), 1 << 22),), dtype=np.int64)[:] = indptr
        group.attrs.update({"format": SPARSE_FORMAT, "shape": [rows, int(n_features)], "bigdr_version": __version__})
        _publish(tmp, final, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def is_sparse_zarr(path: str) -> bool:
    """Whether ``path`` is a CSR group written by :func:`write_sparse_zarr`."""
    try:
        import zarr

        node = zarr.open(str(path), mode="r")
        return isinstance(node, zarr.Group) and node.attrs.get("format") == SPARSE_FORMAT
    except Exception:
        return False


def _read_csr_rows(path: str, r0: int, r1: int, lo: int, hi: int, n_features: int, indptr: np.ndarray):
    import scipy.sparse as sp
    import zarr

    group = zarr.open_group(str(path), mode="r")
    return sp.csr_matrix((group["data"][lo:hi], group["indices"][lo:hi], indptr - lo), shape=(r1 - r0, n_features))


def open_sparse_zarr(path: str, chunk_nnz: int = 8_000_000):
    """A CSR group as a dask array of scipy.sparse row blocks of about ``chunk_nnz`` nonzeros each."""
    import dask
    import scipy.sparse as sp
    import zarr

    group = zarr.open_group(str(path), mode="r")
    n, p = group.attrs["shape"]
    indptr = np.asarray(group["indptr"][:])
    dtype = group["data"].dtype
    # Row boundaries where the nonzero count crosses multiples of chunk_nnz.
    cuts = np.searchsorted(indptr, np.arange(chunk_nnz, indptr[-1], chunk_nnz), side="left")
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    parts = []
    for r0, r1 in zip(bounds[:-1], bounds[1:]):
        lo, hi = int(indptr[r0]), int(indptr[r1])
        block = dask.delayed(_read_csr_rows, pure=True)(str(path), int(r0), int(r1), lo, hi, p, indptr[r0 : r1 + 1])
        parts.append(da.from_delayed(block, shape=(int(r1 - r0), p), dtype=dtype,
                                     meta=sp.csr_matrix((0, p), dtype=dtype)))
    return da.concatenate(parts, axis=0)
