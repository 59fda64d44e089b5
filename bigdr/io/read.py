"""Reading: turn anything array-like into a validated, row-chunked dask array.

Every estimator calls :func:`as_array` at its boundary, so the rules for input
live here and only here.
"""

from __future__ import annotations

import operator
import os
import re
import uuid
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from .._validation import check_block_finite
from .anndata import anndata_input, note_var_names, take_view
from .chunks import READ_AHEAD, ChunkFiles

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
        raise ValueError(
            f"Complex data not supported: {name} has dtype {dtype}; bigdr works on real data. "
            f"Pass the real and imaginary parts as separate columns."
        )
    raise TypeError(
        f"{name} has non-numeric dtype {dtype}; convert it to a numeric array "
        f"(for example with .astype('float64')) first."
    )


def _row_chunks(n: int, row_bytes: int, chunk_bytes: int, base: int | None) -> tuple[int, ...]:
    rows = max(1, chunk_bytes // max(row_bytes, 1))
    if base:
        # Align with the storage chunks so no stored chunk is read twice.
        rows = max(base, (rows // base) * base)
    rows = min(rows, n)
    if rows == 0:  # no rows: one empty chunk
        return (0,)
    full, rest = divmod(n, rows)
    return (rows,) * full + ((rest,) if rest else ())


#: Name prefix of :func:`from_numpy`'s layer, whose source key holds the array itself.
_NUMPY_PREFIX = "bigdr-numpy-"


def from_numpy(X: np.ndarray, row_chunks: tuple[int, ...]) -> da.Array:
    """A dask array whose chunks are views of ``X``: no copy, no hashing.

    ``da.from_array`` copies its input and hashes it to name the keys; for
    1M x 100 float64 that is 0.4-0.6 s before any work (measured), more than
    the PCA fit itself. The caller must not modify ``X`` while a lazy result
    built from it is alive (estimators compute numpy input immediately).
    """
    from dask.highlevelgraph import HighLevelGraph

    name = f"{_NUMPY_PREFIX}{uuid.uuid4().hex}"
    source = f"{name}-source"
    dsk: dict = {source: X}
    bounds = np.cumsum((0,) + tuple(row_chunks))
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        dsk[(name, i, 0)] = (operator.getitem, source, (slice(int(a), int(b)), slice(None)))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, (tuple(row_chunks), (X.shape[1],)), meta=X[:0, :0])


#: Text formats refused with the conversion to use (rather than zarr's "not a store").
TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz")


def _open_path(path: str, *, dataset: str | None, storage_options: dict | None) -> Any:
    lower = path.lower().rstrip("/")
    from .anndata import is_anndata, open_anndata

    if is_anndata(path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such AnnData file: {path!r}")
        return open_anndata(path, dataset or "X", chunk_budget())
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
    if lower.endswith(TEXT_SUFFIXES) and not os.path.isdir(path):
        raise ValueError(
            f"{path!r} is a text file; bigdr reads zarr stores, .npy, HDF5 and AnnData files, not CSV or text. "
            f"Convert it once: in memory, np.save('X.npy', np.loadtxt({path!r}, delimiter=',')); larger than "
            f"memory, dask.dataframe.read_csv({path!r}).to_dask_array(lengths=True).to_zarr('X.zarr')."
        )
    return open_zarr(path, dataset=dataset, storage_options=storage_options)


def open_zarr(path: str, *, dataset: str | None = None, storage_options: dict | None = None):
    """Open a zarr array (format 2 or 3) at a local path or fsspec URL.

    A group is accepted when it holds an array named ``X`` (the layout bigdr's
    generators write) or exactly one array, or when ``dataset`` names one.
    """
    import zarr

    path = os.fspath(path)
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
    allow_missing_chunks: bool | None = None,
) -> da.Array:
    """Turn array-like input into a validated dask array chunked by rows.

    Parameters
    ----------
    X : numpy array, dask array, zarr array, h5py dataset, xarray DataArray or str/Path
        A path may name a zarr store (format 2 or 3, local or fsspec URL), a
        ``.npy`` file (memory-mapped), an HDF5 file (``file.h5:/dataset``) or an
        AnnData store (``.h5ad`` or zarr; ``dataset``: ``X`` (default),
        ``layers/NAME`` or ``obsm/NAME``; CSR read block by block).
    name : str
        Name used in error messages.
    dataset : str, optional
        Array inside a zarr group, HDF5 file or AnnData store.
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
    allow_missing_chunks : bool, optional
        Accept a zarr store some of whose chunk files are absent (read as the
        fill value). Default: the dask config value ``bigdr.allow-missing-chunks``
        (command line ``--allow-missing-chunks``), false: a missing chunk file
        usually means a copy or a write that did not finish.

    Returns
    -------
    dask.array.Array
        Two-dimensional, floating (integers become float64, float32 stays
        float32), chunked by rows.
    """
    chunk_bytes = chunk_budget(chunk_bytes)
    layout = (chunk_bytes, extra_row_bytes, keep_column_chunks)
    opened = _OPENED.get(X.name) if isinstance(X, da.Array) else None
    if opened is not None and opened[1] != layout:
        # A store this function opened, untouched since: open it again at the chunking this pass asks
        # for. Slicing the first opening's chunks would hold them whole (a landmark pass over 100M rows
        # opened at 126 MiB chunks peaked at 966 MiB, at its own 32 MiB at 493 MiB).
        path, ds, options, finite, missing = opened[0]
        again = as_array(
            path, name=name, dataset=ds, storage_options=options, chunk_bytes=chunk_bytes, min_rows=min_rows,
            check_finite=finite, extra_row_bytes=extra_row_bytes, keep_column_chunks=keep_column_chunks,
            allow_missing_chunks=missing,
        )  # fmt: skip
        if again.shape == X.shape and again.dtype == X.dtype:
            return again
        # The store has changed shape since (rows appended): the array stays the rows it was.
    base = None
    given = X
    X, dataset, selection, genes = anndata_input(X, dataset)  # an AnnData's matrix or file, and a view's subset
    if type(X).__module__.startswith("xarray") and hasattr(X, "dims"):
        X = X.data  # an xarray DataArray: its numpy or dask array (rows along the first dimension)
    # An array that already went through as_array keeps its check: passing it on
    # (an estimator to the sampling pass, say) must not stack a second one.
    checked = isinstance(X, da.Array) and _is_checked(X)
    source = None
    X_path = X
    if isinstance(X, (str, Path)):
        if "://" not in str(X):
            source = os.path.realpath(re.sub(r"(?i)(\.(h5|hdf5|hdf)):.*$", r"\1", str(X)))
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
        arr = zarr_source(X, allow_missing_chunks=allow_missing_chunks)
    elif (
        hasattr(X, "shape")
        and hasattr(X, "dtype")
        and not isinstance(X, np.ndarray)
        and type(X).__module__.startswith("h5py")
    ):
        base = X.chunks[0] if X.chunks else None
        arr = da.from_array(X, chunks=X.chunks or "auto", lock=True)
    else:
        if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
            raise TypeError(
                f"{name} is a scipy.sparse matrix; this method needs dense rows. Reduce it first with a method "
                f"that takes sparse data, e.g. bigdr.PCA(50).fit_transform(X) (or bigdr.TruncatedSVD for data "
                f"that must not be centred), and embed that."
            )
        if not isinstance(X, np.ndarray):
            try:
                X = np.asarray(X)
            except Exception as exc:
                raise TypeError(f"{name} could not be read as an array: {exc}") from exc
        if X.dtype == object:  # numbers stored as Python objects (pandas, lists of mixed types)
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{name} has entries that are not numbers ({exc}); convert it to a numeric array first."
                ) from exc
        if X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1 and X.dtype.kind in "biuf":
            itemsize = _float_dtype(X.dtype, name).itemsize
            arr = from_numpy(X, _row_chunks(X.shape[0], X.shape[1] * itemsize + extra_row_bytes, chunk_bytes, None))
        else:  # invalid input: let the checks below name the problem
            arr = da.from_array(X, chunks=X.shape or 1, name=False)

    if selection is not None:  # a view of a backed AnnData object: its cells and genes, block by block
        arr, base = take_view(arr, selection), None
    if source is not None:
        _SOURCES[arr.name] = source
    if arr.ndim != 2:
        hint = (
            (
                " Reshape your data either using X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) "
                "if it is a single sample."
            )
            if arr.ndim == 1
            else ""
        )
        raise ValueError(f"{name} must be 2-D (samples x features); got {arr.ndim}-D with shape {arr.shape}.{hint}")
    n, p = arr.shape
    if any(np.isnan(s) for s in arr.shape):
        raise ValueError(f"{name} has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    # The wording of scikit-learn's check_array, so tools that parse it keep working.
    if p < 1:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required: "
            f"{name} needs at least one feature."
        )
    if n < min_rows:
        raise ValueError(
            f"Found array with {n} sample(s) (shape={arr.shape}) while a minimum of {min_rows} is "
            f"required: {name} needs at least {min_rows} rows."
        )
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
    target = (tuple(row_chunks), tuple(col_chunks))
    if target != arr.chunks and is_zarr and selection is None and _whole_chunks(target, X.chunks):
        # read in these blocks: merging the storage chunks afterwards would copy every block once more
        arr = _zarr_array(X, target)
        arr = arr.astype(dtype) if arr.dtype != dtype else arr
    elif target != arr.chunks:
        arr = arr.rechunk(target)
    out = with_finite_check(arr) if check_finite and not checked else arr
    note_var_names(out, genes, before=given)
    if source is not None and selection is None:
        _OPENED[out.name] = ((str(X_path), dataset, storage_options, check_finite, allow_missing_chunks), layout)
    return out


#: Layer name -> the path of the file or store it reads: how an output is checked against its inputs.
_SOURCES: dict[str, str] = {}
#: Name of an array :func:`as_array` opened from a path -> how (path, dataset, storage options, finite
#: check, missing chunks) and its layout (chunk bytes, extra row bytes, column chunks kept).
_OPENED: dict[str, tuple[tuple[Any, ...], tuple[int, int, bool]]] = {}


#: Layer name -> the bytes its reads ahead hold (a zarr store larger than memory; :class:`~bigdr.io.chunks.ReadAhead`).
_READ_AHEAD: dict[str, int] = {}


def read_ahead_bytes(arr: Any) -> int:
    """Memory the reads ahead of the stores larger than memory that dask array ``arr`` reads may hold."""
    if not isinstance(arr, da.Array):
        return 0
    layers = getattr(arr.__dask_graph__(), "layers", {})
    return sum(_READ_AHEAD.get(name, 0) for name in layers)


def source_paths(arr: Any) -> list[str]:
    """Local paths of the stores and files a dask array built by :func:`as_array` reads."""
    if not isinstance(arr, da.Array):
        return []
    layers = getattr(arr.__dask_graph__(), "layers", {})
    return sorted({_SOURCES[name] for name in layers if name in _SOURCES})


def _store_location(X: Any) -> str | None:
    """The local directory of a zarr array, or None for remote or in-memory stores."""
    root = getattr(getattr(X, "store", None), "root", None)
    if root is None:
        return None
    sub = str(getattr(X, "path", "") or "")
    return os.path.join(str(root), sub) if sub else str(root)


class _ZarrReader:
    """Reads row blocks of a zarr array; a chunk that cannot be decoded is named, with its rows."""

    def __init__(self, array: Any, location: str):
        self.array, self.location = array, location
        self.shape, self.dtype, self.ndim = array.shape, array.dtype, array.ndim
        self.files = ChunkFiles.of(array, _store_location(array))

    def __dask_tokenize__(self) -> tuple:
        return ("bigdr-zarr", self.location, self.shape, str(self.dtype), self.array.chunks)

    def __getitem__(self, key: Any) -> np.ndarray:
        try:
            block = None if self.files is None else self.files.get(key)
            return np.asarray(self.array[key]) if block is None else block
        except Exception as exc:
            raise self._damage(key, exc) from exc

    def _damage(self, key: Any, exc: Exception) -> Exception:
        rows = key[0] if isinstance(key, tuple) else key
        step = self.array.chunks[0]
        start, stop = (rows.start or 0, rows.stop if rows.stop is not None else self.shape[0])
        for first in range(start - start % step, stop, step):
            coords = (first // step,) + (0,) * (self.ndim - 1)
            try:
                self.array[first : min(first + step, self.shape[0])]
            except Exception as chunk_exc:
                chunk_key = self.array.metadata.encode_chunk_key(coords)
                return ValueError(
                    f"Cannot read chunk {chunk_key} of the zarr store {self.location} (rows {first} to "
                    f"{min(first + step, self.shape[0]) - 1}): {chunk_exc}. The store is damaged; restore the "
                    f"chunk file or write the store again from its source."
                )
        return ValueError(f"Cannot read rows {start} to {stop - 1} of the zarr store {self.location}: {exc}")


def missing_chunks(X: Any) -> list[str]:
    """Keys of the chunks of zarr array ``X`` that have no file in a local store (empty when complete)."""
    location = _store_location(X)
    if X.nchunks_initialized >= X.nchunks:  # one listing of the store
        return []
    if location is None:
        return [f"{X.nchunks - X.nchunks_initialized} chunk(s)"]
    grid = [range(-(-s // c)) for s, c in zip(X.shape, X.chunks)]
    import itertools

    return [
        key
        for key in (X.metadata.encode_chunk_key(coords) for coords in itertools.product(*grid))
        if not os.path.exists(os.path.join(location, key))
    ]


def zarr_source(X: Any, *, allow_missing_chunks: bool | None = None) -> da.Array:
    """A dask array reading zarr array ``X`` by its storage chunks, refusing absent chunk files.

    zarr reads an absent chunk file as the fill value, so a store whose copy
    was cut short reads as valid data with zeros in it. Listing the store is
    cheap next to reading it, so it is done first.
    """
    import dask

    if allow_missing_chunks is None:
        allow_missing_chunks = bool(dask.config.get("bigdr.allow-missing-chunks", False))
    location = _store_location(X) or str(getattr(X, "store", "zarr store"))
    if X.ndim >= 1 and X.size:
        missing = missing_chunks(X)
        if missing and not allow_missing_chunks:
            step = X.chunks[0]
            first = missing[0]
            rows = ""
            if "/" in first or "." in first:
                index = int(first.replace(".", "/").split("/")[-X.ndim])
                rows = f" (the first, {first}, holds rows {index * step} to {min((index + 1) * step, X.shape[0]) - 1})"
            raise ValueError(
                f"The zarr store {location} lacks {len(missing)} of its {X.nchunks} chunk files{rows}; zarr would "
                f"read them as {X.fill_value}. If the store is sparse on purpose, pass allow_missing_chunks=True "
                f"(command line: --allow-missing-chunks); otherwise copy or write it again."
            )
        if missing:
            import warnings

            from ..exceptions import BigdrWarning

            warnings.warn(
                f"{len(missing)} of the {X.nchunks} chunks of {location} are absent and read as {X.fill_value}.",
                BigdrWarning,
                stacklevel=3,
            )
    return _zarr_array(X, X.chunks)


def _zarr_array(X: Any, chunks: Any) -> da.Array:
    """``X`` read as a dask array of blocks ``chunks``."""
    location = _store_location(X)
    reader = _ZarrReader(X, location or str(getattr(X, "store", "zarr store")))
    arr = da.from_array(reader, chunks=chunks, asarray=False, fancy=False)
    if location is not None:
        _SOURCES[arr.name] = os.path.realpath(location)
    if reader.files is not None and reader.files.ahead is not None:
        block = int(np.prod([max(c) for c in arr.chunks])) * arr.dtype.itemsize
        _READ_AHEAD[arr.name] = READ_AHEAD * block
    return arr


def _whole_chunks(chunks: tuple[tuple[int, ...], ...], storage: tuple[int, ...]) -> bool:
    """Whether every block of ``chunks`` is a box of whole storage chunks."""
    return all(not (int(edge) % step) for sizes, step in zip(chunks, storage) for edge in np.cumsum(sizes)[:-1])


def with_finite_check(arr: da.Array) -> da.Array:
    """Add the lazy NaN/Inf check to every block of ``arr`` (fused into the next pass)."""
    return da.map_blocks(_finite_block, arr, dtype=arr.dtype, name=f"{_FINITE_PREFIX}{arr.name}")


#: Name prefix of the check's layer: how :func:`as_array` recognises checked input.
_FINITE_PREFIX = "bigdr-check-finite-"


def _is_checked(X: da.Array) -> bool:
    """Whether ``X`` is a checked array seen through single-input steps (rechunk, astype, slicing)."""
    graph = X.__dask_graph__()
    deps: dict = getattr(graph, "dependencies", {})  # a HighLevelGraph's layer dependencies
    name = X.name
    while not name.startswith(_FINITE_PREFIX):
        parents = deps.get(name, set())
        if len(parents) != 1:  # a source, or several inputs of which some may be unchecked
            return False
        (name,) = parents
    return True


def rows_in_memory(X: da.Array, **compute_kwargs: Any) -> np.ndarray:
    """All rows of ``X`` in this process, as one C-contiguous numpy array.

    Numpy input as :func:`as_array` wraps it (row blocks that are views of
    one C-contiguous array, under the lazy finite check or not) gives that
    array itself, once the check has run on its blocks here: computing the
    blocks and joining them would copy it (one-off, the 1M x 50 float32 rows
    of the single-cell benchmark's diffusion map: 200 MB more through the
    eigensolver, where its peak is). The caller must not modify it in place.
    Anything else is computed (``compute_kwargs``: for the scheduler).
    """
    from ..runtime.compute import compute

    source = _numpy_source(X)
    if source is None:
        (rows,) = compute(X, **compute_kwargs)
        return np.ascontiguousarray(rows)
    if X.name.startswith(_FINITE_PREFIX):  # the check, on views of the array's blocks
        compute(*X.to_delayed().ravel(), scheduler="threads")
    return source


def _numpy_source(X: Any) -> np.ndarray | None:
    """The array behind ``X`` when ``X`` is all of it as :func:`from_numpy` gave it (finite check or not)."""
    if not isinstance(X, da.Array):
        return None
    graph = X.__dask_graph__()
    name = X.name
    if name.startswith(_FINITE_PREFIX):
        parents = getattr(graph, "dependencies", {}).get(name, set())
        if len(parents) != 1:
            return None
        (name,) = parents
    layer = getattr(graph, "layers", {}).get(name) if name.startswith(_NUMPY_PREFIX) else None
    source = None if layer is None else layer.get(f"{name}-source")
    if (
        isinstance(source, np.ndarray)
        and source.shape == X.shape
        and source.dtype == X.dtype
        and source.flags.c_contiguous
    ):
        return source
    return None


def _finite_block(block: np.ndarray, block_info: Any = None) -> np.ndarray:
    first_row = block_info[0]["array-location"][0][0] if block_info else 0
    return check_block_finite(block, first_row)
