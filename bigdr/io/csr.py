"""CSR row blocks streamed into ``data``, ``indices`` and ``indptr`` arrays of a zarr or h5py group, and read back.

The one block loop behind bigdr's CSR stores (:func:`bigdr.io.sparse.write_sparse_zarr`)
and AnnData files (:func:`bigdr.io.anndata.write_anndata`), and the one row cut of their
readers (:func:`row_blocks`).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np


def row_blocks(indptr: np.ndarray, chunk_nnz: int) -> np.ndarray:
    """Row boundaries, 0 and ``n`` included, where a stored CSR's nonzero count crosses multiples of ``chunk_nnz``."""
    n = len(indptr) - 1
    cuts = np.searchsorted(indptr, np.arange(chunk_nnz, max(int(indptr[-1]), 1), chunk_nnz), side="left")
    return np.unique(np.concatenate([[0], cuts, [n]]))


def as_blocks(blocks: Any, n_features: int | None) -> tuple[Any, int]:
    """A matrix, a dask array of CSR blocks or an iterable of CSR blocks, as an iterable of blocks and the width."""
    import scipy.sparse as sp

    if sp.issparse(blocks):
        return [sp.csr_matrix(blocks)], blocks.shape[1]
    if isinstance(blocks, da.Array):
        from ..runtime.compute import compute

        X = blocks.rechunk({1: -1}) if len(blocks.chunks[1]) > 1 else blocks
        parts = X.to_delayed().ravel()
        # computed two blocks at a time (the worker threads), appended in order
        return (b for i in range(0, len(parts), 2) for b in compute(*parts[i : i + 2])), X.shape[1]
    if n_features is None:
        raise ValueError("n_features is needed when blocks is an iterable of row blocks.")
    return blocks, int(n_features)


def append_csr(group: Any, blocks: Any, n_features: int, chunk_nnz: int = 1 << 22) -> int:
    """Append CSR row blocks to ``data``, ``indices`` and ``indptr`` of a zarr or h5py group; the rows written.

    Arrays grow block by block, so a matrix larger than memory streams
    through; ``indptr`` is written at the end (int32 when the nonzeros allow, as scipy's).
    """
    import scipy.sparse as sp

    index_dtype = np.int32 if n_features < 2**31 else np.int64
    made: dict[str, Any] | None = None
    indptr_parts, nnz, rows = [np.zeros(1, np.int64)], 0, 0
    for block in blocks:
        block = sp.csr_matrix(block)
        if block.shape[1] != n_features:
            raise ValueError(f"A block has {block.shape[1]} columns; expected {n_features}.")
        if made is None:
            made = {
                name: _growable(group, name, dt, chunk_nnz)
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
    # int32 while it can hold the nonzeros, as scipy and anndata write it (scikit-learn's sparse kernels,
    # which scanpy calls, refuse an int64 indptr beside int32 indices)
    indptr = np.concatenate(indptr_parts).astype(np.int32 if nnz < 2**31 else np.int64)
    _growable(group, "indptr", indptr.dtype, min(len(indptr), chunk_nnz), len(indptr))[:] = indptr
    return rows


def _growable(group: Any, name: str, dtype: Any, chunk: int, size: int = 0) -> Any:
    if hasattr(group, "create_dataset") and not hasattr(group, "create_array"):  # h5py
        return group.create_dataset(name, shape=(size,), maxshape=(None,), chunks=(chunk,), dtype=dtype)
    return group.create_array(name, shape=(size,), chunks=(chunk,), dtype=dtype)
