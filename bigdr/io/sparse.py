"""Sparse (CSR) matrices in zarr groups, written in blocks and read as dask arrays of scipy.sparse blocks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from .._version import __version__
from .csr import append_csr, as_blocks, row_blocks
from .outputs import check_output, publish, temporary_sibling

SPARSE_FORMAT = "bigdr-csr"


def write_sparse_zarr(
    blocks: Any,
    path: str | os.PathLike,
    n_features: int | None = None,
    *,
    overwrite: bool = False,
    chunk_nnz: int = 1 << 22,
) -> Path:
    """Write a CSR matrix, or an iterable of CSR row blocks, to a zarr group atomically.

    The group holds ``indptr`` (int32, or int64 past 2**31 nonzeros), ``indices`` (int32 or int64) and
    ``data``, with ``{"format": "bigdr-csr", "shape": [n, p]}`` in its
    attributes; blocks are appended as they come, so a matrix larger than
    memory can be written from a generator.
    """
    import zarr

    blocks, n_features = as_blocks(blocks, n_features)
    final = check_output(path, "store", overwrite=overwrite)
    tmp = temporary_sibling(final)
    try:
        group = zarr.open_group(str(tmp), mode="w")
        rows = append_csr(group, blocks, n_features, chunk_nnz)
        group.attrs.update({"format": SPARSE_FORMAT, "shape": [rows, int(n_features)], "bigdr_version": __version__})
        publish(tmp, final, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def is_sparse_zarr(path: str) -> bool:
    """Whether ``path`` is a CSR group written by :func:`write_sparse_zarr`."""
    if os.path.isfile(path):  # a group is a directory or a URL; an .h5ad file need not import zarr (0.14 s)
        return False
    try:
        import zarr

        node = zarr.open(str(path), mode="r")
        return isinstance(node, zarr.Group) and node.attrs.get("format") == SPARSE_FORMAT
    except Exception:
        return False


def _read_csr_rows(path: str, r0: int, r1: int, lo: int, hi: int, n_features: int, indptr: np.ndarray):
    import scipy.sparse as sp
    import zarr

    group: Any = zarr.open_group(str(path), mode="r")
    return sp.csr_matrix((group["data"][lo:hi], group["indices"][lo:hi], indptr - lo), shape=(r1 - r0, n_features))


def open_sparse_zarr(path: str, chunk_nnz: int = 8_000_000):
    """A CSR group as a dask array of scipy.sparse row blocks of about ``chunk_nnz`` nonzeros each."""
    import dask
    import scipy.sparse as sp
    import zarr

    group: Any = zarr.open_group(str(path), mode="r")
    n, p = group.attrs["shape"]
    indptr = np.asarray(group["indptr"][:])
    dtype = group["data"].dtype
    bounds = row_blocks(indptr, chunk_nnz)
    parts = []
    for r0, r1 in zip(bounds[:-1], bounds[1:]):
        lo, hi = int(indptr[r0]), int(indptr[r1])
        block = dask.delayed(_read_csr_rows, pure=True)(str(path), int(r0), int(r1), lo, hi, p, indptr[r0 : r1 + 1])
        parts.append(
            da.from_delayed(block, shape=(int(r1 - r0), p), dtype=dtype, meta=sp.csr_matrix((0, p), dtype=dtype))
        )
    return da.concatenate(parts, axis=0)


#: Nonzeros per row block of a sparse input: about 100 MB of data and indices, the size of a dense block.
SPARSE_CHUNK_NNZ = 8_000_000
#: Bytes a CSR row block holds per nonzero in memory (value, column index, and a product's scratch).
SPARSE_NNZ_BYTES = 24


def is_sparse_input(X: Any, dataset: str | None = None) -> bool:
    """Whether ``X`` is sparse data that :func:`as_sparse_array` reads without densifying.

    A scipy.sparse matrix or array, a dask array of scipy.sparse blocks, a CSR
    group written by :func:`write_sparse_zarr`, or an AnnData file or store
    whose ``X`` (or ``dataset``: ``layers/NAME``) is CSR.
    """
    import scipy.sparse as sp

    from .anndata import anndata_source, is_anndata_object

    if is_anndata_object(X):
        return is_sparse_input(*anndata_source(X, dataset))
    if sp.issparse(X):
        return True
    if isinstance(X, da.Array):
        return sp.issparse(X._meta)
    if isinstance(X, (str, os.PathLike)):
        path = str(X)
        if is_sparse_zarr(path):
            return True
        from .anndata import element_encoding, is_anndata

        return is_anndata(path) and element_encoding(path, dataset or "X") == "csr_matrix"
    return False


def canonical_block(block: Any) -> Any:
    """A CSR row block checked and made canonical, the one rule for sparse input.

    Values must be finite; integer and boolean values (counts) become float64,
    float16 float32; unsorted column indices are sorted and duplicate entries
    summed (scipy's canonical form: a duplicate means the sum, as in a COO
    matrix of counts). Column indices must lie in the matrix.
    """
    import scipy.sparse as sp

    block = sp.csr_matrix(block)
    if not np.issubdtype(block.dtype, np.floating):
        block = block.astype(np.float64)
    elif block.dtype == np.float16:
        block = block.astype(np.float32)
    if block.nnz and not np.isfinite(block.data).all():
        raise ValueError("The sparse input contains NaN or infinity among its stored values; remove or impute them.")
    if not block.has_canonical_format:
        block.sum_duplicates()  # sorts the indices too
    return block


def _sparse_block_rows(X: Any) -> int:
    """Rows per block for an in-memory sparse matrix: about :data:`SPARSE_CHUNK_NNZ` nonzeros."""
    return max(1, int(SPARSE_CHUNK_NNZ / max(1.0, X.nnz / max(X.shape[0], 1))))


def as_sparse_array(X: Any, name: str = "X", min_rows: int = 2, dataset: str | None = None) -> da.Array:
    """Sparse input as a dask array of canonical CSR row blocks, never densified.

    Parameters
    ----------
    X : scipy.sparse matrix or array, dask array of scipy.sparse blocks, or path
        CSR and CSC (matrix and array classes), a dask array whose blocks are
        scipy.sparse, a CSR group of :func:`write_sparse_zarr`, or an AnnData
        ``.h5ad`` file or zarr store whose element is CSR (read lazily, a
        block of rows at a time: ``indptr`` once, each block's slice of
        ``data`` and ``indices`` in its task).
    name : str
        The input's name in messages.
    min_rows : int
        Fewest rows accepted.
    dataset : str, optional
        The AnnData element: ``X`` (default) or ``layers/NAME``.

    Returns
    -------
    dask.array.Array
        Row blocks of about :data:`SPARSE_CHUNK_NNZ` nonzeros, each checked
        and made canonical by :func:`canonical_block` when it is computed.
    """
    import uuid

    import scipy.sparse as sp

    from .anndata import anndata_input, note_var_names, take_view

    given = X
    X, dataset, selection, genes = anndata_input(X, dataset)  # an AnnData's matrix or file, and a view's subset
    if isinstance(X, (str, os.PathLike)):
        path = str(X)
        if is_sparse_zarr(path):
            Xd = open_sparse_zarr(path, SPARSE_CHUNK_NNZ)
        else:
            from .anndata import open_anndata_csr

            Xd = take_view(open_anndata_csr(path, dataset or "X", SPARSE_CHUNK_NNZ), selection)
    elif sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D; got a sparse array of shape {X.shape}.")
        X = sp.csr_matrix(X)  # CSC and the array classes too: rows are what every pass reads
        Xd = da.from_array(
            X,
            chunks=(_sparse_block_rows(X), X.shape[1]),
            asarray=False,
            name=f"bigdr-sparse-{uuid.uuid4().hex}",
            meta=sp.csr_matrix((0, X.shape[1]), dtype=X.dtype),
        )
    elif isinstance(X, da.Array) and sp.issparse(X._meta):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D; got a dask array of shape {X.shape}.")
        Xd = X.rechunk({1: X.shape[1]}) if len(X.chunks[1]) > 1 else X
    else:
        raise TypeError(f"{name} is not sparse (a {type(X).__name__}); use bigdr.as_array for dense input.")
    if Xd.shape[0] < min_rows:
        raise ValueError(f"{name} has {Xd.shape[0]} row(s); at least {min_rows} are needed.")
    dtype = np.float64 if not np.issubdtype(Xd.dtype, np.floating) else Xd.dtype
    dtype = np.float32 if dtype == np.float16 else dtype
    out = Xd.map_blocks(canonical_block, dtype=dtype, meta=sp.csr_matrix((0, Xd.shape[1]), dtype=dtype))
    return note_var_names(out, genes, before=given)
