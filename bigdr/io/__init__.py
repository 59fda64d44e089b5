"""The data layer: reading any array-like input as a row-chunked dask array
(:mod:`bigdr.io.read`), writing atomic and resumable zarr stores
(:mod:`bigdr.io.write`) and sparse CSR stores (:mod:`bigdr.io.sparse`)."""

from .append import append_zarr, batch_identity, check_repeat, staging_path
from .obsm import write_obsm
from .outputs import check_growable, check_output, describe_os_error, publish, temporary_sibling, written_by_bigdr
from .read import (
    DEFAULT_CHUNK_BYTES,
    as_array,
    chunk_budget,
    from_numpy,
    missing_chunks,
    open_zarr,
    rows_in_memory,
    source_paths,
    with_finite_check,
)
from .sparse import as_sparse_array, is_sparse_input, is_sparse_zarr, open_sparse_zarr, write_sparse_zarr
from .write import DONE_DIR, partial_path, read_attrs, write_zarr

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "DONE_DIR",
    "append_zarr",
    "batch_identity",
    "check_repeat",
    "as_array",
    "as_sparse_array",
    "is_sparse_input",
    "check_growable",
    "check_output",
    "describe_os_error",
    "chunk_budget",
    "from_numpy",
    "is_sparse_zarr",
    "missing_chunks",
    "open_sparse_zarr",
    "open_zarr",
    "partial_path",
    "rows_in_memory",
    "publish",
    "write_obsm",
    "read_attrs",
    "source_paths",
    "staging_path",
    "temporary_sibling",
    "with_finite_check",
    "write_sparse_zarr",
    "write_zarr",
    "written_by_bigdr",
]
