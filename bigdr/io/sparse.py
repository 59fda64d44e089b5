"""Sparse (CSR) matrices in zarr groups, written in blocks and read as dask arrays of scipy.sparse blocks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from .._version import __version__
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
    final = check_output(path, "store", overwrite=overwrite)
    tmp = temporary_sibling(final)
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
                made = {
                    name: group.create_array(name, shape=(0,), chunks=(chunk_nnz,), dtype=dt)
                    for name, dt in (("data", block.dtype), ("indices", index_dtype))
                }
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
        group.create_array("indptr", shape=indptr.shape, chunks=(min(len(indptr), 1 << 22),), dtype=np.int64)[:] = (
            indptr
        )
        group.attrs.update({"format": SPARSE_FORMAT, "shape": [rows, int(n_features)], "bigdr_version": __version__})
        publish(tmp, final, overwrite)
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
    # Row boundaries where the nonzero count crosses multiples of chunk_nnz.
    cuts = np.searchsorted(indptr, np.arange(chunk_nnz, indptr[-1], chunk_nnz), side="left")
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    parts = []
    for r0, r1 in zip(bounds[:-1], bounds[1:]):
        lo, hi = int(indptr[r0]), int(indptr[r1])
        block = dask.delayed(_read_csr_rows, pure=True)(str(path), int(r0), int(r1), lo, hi, p, indptr[r0 : r1 + 1])
        parts.append(
            da.from_delayed(block, shape=(int(r1 - r0), p), dtype=dtype, meta=sp.csr_matrix((0, p), dtype=dtype))
        )
    return da.concatenate(parts, axis=0)
