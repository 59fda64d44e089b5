"""AnnData stores: ``.h5ad`` files and AnnData zarr stores, read lazily; embeddings written into ``obsm``.

AnnData keeps a cells x genes matrix ``X`` (dense, or CSR as a group of
``data``, ``indices`` and ``indptr`` with ``encoding-type: csr_matrix``),
``layers/<name>`` of the same shape and ``obsm/<name>`` (per-cell matrices
such as ``X_pca``). :func:`open_anndata` reads any of them as a dask array
chunked by rows without loading the matrix: dense elements through zarr or
h5py, CSR ones block by block (``indptr`` read once, each block's slice of
``data`` and ``indices`` densified in its task). Writing into ``obsm`` is
:mod:`bigdr.io.obsm`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np

from .csr import row_blocks


def is_anndata(path: str) -> bool:
    """Whether ``path`` is an ``.h5ad`` file or a local AnnData zarr store."""
    if "://" in path:
        return False
    if path.lower().rstrip("/").endswith(".h5ad"):
        return True
    meta = [Path(path) / name for name in ("zarr.json", ".zattrs")]
    if not any(m.is_file() for m in meta):
        return False
    import zarr

    try:
        return zarr.open_group(path, mode="r").attrs.get("encoding-type") == "anndata"
    except Exception:  # not a group
        return False


def _root(path: str) -> Any:
    if path.lower().rstrip("/").endswith(".h5ad"):
        import h5py

        return h5py.File(path, "r")
    import zarr

    return zarr.open_group(path, mode="r")


def _element(root: Any, path: str, element: str) -> Any:
    try:
        return root[element]
    except KeyError:
        raise ValueError(
            f"AnnData store {path!r} has no element {element!r}; give X, layers/NAME or obsm/NAME "
            f"(command line: --dataset)."
        ) from None


def _dense_rows(path: str, element: str, start: int, stop: int) -> np.ndarray:
    """Rows of a dense element of an ``.h5ad`` file, the file closed again (so it can be written to after)."""
    import h5py

    with h5py.File(path, "r") as f:
        return np.asarray(f[element][start:stop])


def _csr_rows(path: str, element: str, start: int, stop: int, n_cols: int) -> np.ndarray:
    """Rows of a CSR element densified (for the methods that need dense rows: one bounded block)."""
    block = _csr_block(path, element, start, stop, n_cols)
    return block.toarray().astype(np.float32 if block.dtype == np.float32 else np.float64, copy=False)


def element_encoding(path: str, element: str) -> str | None:
    """The AnnData encoding of an element (``array``, ``csr_matrix``, ...), None if it does not exist."""
    root = _root(path)
    try:
        node = root[element]
    except KeyError:
        return None
    return str(node.attrs.get("encoding-type", "array"))


def _csr_block(path: str, element: str, start: int, stop: int, n_cols: int) -> Any:
    import scipy.sparse as sp

    node = _element(_root(path), path, element)
    indptr = np.asarray(node["indptr"][start : stop + 1], dtype=np.int64)
    if np.any(np.diff(indptr) < 0):
        raise ValueError(f"{path!r}:{element} has a decreasing indptr in rows {start}-{stop - 1}; the file is damaged.")
    lo, hi = int(indptr[0]), int(indptr[-1])
    data, indices = np.asarray(node["data"][lo:hi]), np.asarray(node["indices"][lo:hi])
    if len(indices) and (indices.min() < 0 or indices.max() >= n_cols):
        raise ValueError(f"{path!r}:{element} has column indices outside 0..{n_cols - 1} in rows {start}-{stop - 1}.")
    return sp.csr_matrix((data, indices, indptr - lo), shape=(stop - start, n_cols))


def open_anndata_csr(path: str, element: str = "X", chunk_nnz: int = 8_000_000) -> da.Array:
    """A CSR element of an AnnData store as a dask array of scipy.sparse row blocks of about ``chunk_nnz`` nonzeros."""
    import scipy.sparse as sp

    node = _element(_root(path), path, element)
    kind = node.attrs.get("encoding-type", "array")
    if kind != "csr_matrix":
        raise ValueError(f"{path!r}:{element} is stored as {kind!r}, not CSR; read it with bigdr.as_array.")
    n, p = (int(v) for v in node.attrs["shape"])
    if int(node["indptr"].shape[0]) != n + 1:
        entries = node["indptr"].shape[0]
        raise ValueError(f"{path!r}:{element} has {entries} indptr entries for {n} rows; it is damaged.")
    indptr = np.asarray(node["indptr"][:], dtype=np.int64)
    dtype = node["data"].dtype
    bounds = row_blocks(indptr, chunk_nnz)
    meta = sp.csr_matrix((0, p), dtype=dtype)
    blocks = [
        da.from_delayed(
            dask.delayed(_csr_block, pure=True)(path, element, int(s), int(e), p),
            shape=(int(e - s), p),
            dtype=dtype,
            meta=meta,
        )
        for s, e in zip(bounds[:-1], bounds[1:])
    ]
    return da.concatenate(blocks, axis=0)


def open_anndata(path: str, element: str = "X", chunk_bytes: int = 128 << 20) -> Any:
    """An element of an AnnData store: the zarr array or h5py dataset when dense, a dask array when CSR."""
    root = _root(path)
    node = _element(root, path, element)
    kind = node.attrs.get("encoding-type", "array")
    if kind == "array" and hasattr(node, "shape"):
        if not path.lower().rstrip("/").endswith(".h5ad"):
            return node
        # HDF5 refuses to open a file for writing while it is open for reading in the same process:
        # read by blocks that close the file, so an embedding can be written into it (bigdr.io.obsm).
        n, dtype, shape = int(node.shape[0]), node.dtype, node.shape
        rows = max(1, min(n, chunk_bytes // max(1, int(np.prod(shape[1:])) * dtype.itemsize)))
        return da.concatenate(
            [
                da.from_delayed(
                    dask.delayed(_dense_rows, pure=True)(path, element, s, min(s + rows, n)),
                    shape=(min(s + rows, n) - s, *shape[1:]),
                    dtype=dtype,
                )
                for s in range(0, n, rows)
            ],
            axis=0,
        )
    if kind == "csc_matrix":
        raise ValueError(
            f"{path!r}:{element} is stored as CSC (column-compressed), which cannot be read by rows; "
            f"convert it once with anndata (adata.X = adata.X.tocsr(); adata.write_zarr(...))."
        )
    if kind != "csr_matrix":
        raise ValueError(f"{path!r}:{element} is an AnnData {kind!r}, not a matrix; give X, layers/NAME or obsm/NAME.")
    n, p = (int(v) for v in node.attrs["shape"])
    dtype = np.float32 if node["data"].dtype == np.float32 else np.float64
    rows = max(1, min(n, chunk_bytes // max(1, p * np.dtype(dtype).itemsize)))
    blocks = [
        da.from_delayed(
            dask.delayed(_csr_rows, pure=True)(path, element, s, min(s + rows, n), p),
            shape=(min(s + rows, n) - s, p),
            dtype=dtype,
        )
        for s in range(0, n, rows)
    ]
    return da.concatenate(blocks, axis=0)


def n_obs(store: str) -> int:
    """The number of cells (rows) of an AnnData store."""
    root = _root(store)
    node = root["X"] if "X" in root else None
    if node is not None:
        shape = node.attrs.get("shape") if not hasattr(node, "shape") else node.shape
        return int(shape[0])
    obs = root["obs"]
    index = obs.attrs.get("_index", "_index")
    return int(obs[index].shape[0])


def _describe_element(node: Any) -> str:
    """One line for a matrix element: encoding, shape, dtype, and the nonzeros of a sparse one."""
    kind = str(node.attrs.get("encoding-type", "array"))
    if kind in ("csr_matrix", "csc_matrix"):
        shape = tuple(int(v) for v in node.attrs["shape"])
        nnz = int(node["data"].shape[0])
        density = nnz / max(1, shape[0] * shape[1])
        return f"{kind} {shape[0]} x {shape[1]}, {node['data'].dtype}, {nnz:,} nonzeros ({100 * density:.2f}%)"
    if hasattr(node, "shape") and hasattr(node, "dtype"):
        dims = " x ".join(str(int(v)) for v in node.shape)
        return f"dense {dims}, {node.dtype}"
    return kind


def describe_anndata(path: str) -> list[str]:
    """What an AnnData file or store holds, a line per element: ``X``, ``layers``, ``obsm``, ``varm``,
    ``obsp``, and the keys of ``uns`` (read from the metadata; no matrix is loaded)."""
    root = _root(path)
    kind = "h5ad file" if path.lower().rstrip("/").endswith(".h5ad") else "zarr store"
    lines = [f"AnnData {kind}, {n_obs(path):,} cells (obs)"]
    if "X" in root:
        lines.append(f"X: {_describe_element(root['X'])}")
    for group in ("layers", "obsm", "varm", "obsp", "varp"):
        if group in root:
            for name in sorted(root[group].keys()):
                lines.append(f"{group}/{name}: {_describe_element(root[group][name])}")
    uns = sorted(root["uns"].keys()) if "uns" in root else []
    if uns:
        lines.append(f"uns: {', '.join(uns)}")
    if "raw" in root:
        lines.append("raw: " + (_describe_element(root["raw"]["X"]) if "X" in root["raw"] else "present"))
    return lines


def is_anndata_object(X: Any) -> bool:
    """Whether ``X`` is an ``anndata.AnnData`` object (in memory or backed)."""
    return type(X).__name__ == "AnnData" and type(X).__module__.startswith("anndata")


def anndata_source(adata: Any, element: str | None = None) -> tuple[Any, str | None]:
    """What an AnnData object's element is read from, and the element to read there.

    ``(filename, element)`` for a backed object, ``(matrix, None)`` for one in memory
    (:func:`anndata_matrix`).
    """
    if getattr(adata, "isbacked", False):
        return str(adata.filename), element or "X"
    return anndata_matrix(adata, element), None


def anndata_matrix(adata: Any, element: str | None = None) -> Any:
    """What an AnnData object's element is read from: its file when backed, else the matrix itself.

    ``element``: ``X`` (default), ``layers/NAME`` or ``obsm/NAME``. A backed
    object (``read_h5ad(..., backed="r")``) is read lazily from its file, as a
    path would be; an object in memory gives its numpy array or scipy.sparse
    matrix, used as it is (never through ``numpy.asarray`` of the AnnData, which
    goes cell by cell).
    """
    element = element or "X"
    if getattr(adata, "isbacked", False):
        return str(adata.filename)
    kind, _, name = element.partition("/")
    if kind == "X" and not name:
        matrix = adata.X
    elif kind in ("layers", "obsm") and name:
        mapping = getattr(adata, kind)
        if name not in mapping:
            raise ValueError(f"The AnnData object has no {kind}[{name!r}]; it has {sorted(mapping.keys())}.")
        matrix = mapping[name]
    else:
        raise ValueError(f"Give X, layers/NAME or obsm/NAME of the AnnData object; got {element!r}.")
    if matrix is None:
        raise ValueError(f"The AnnData object's {element} is empty (None).")
    return matrix


def write_anndata(
    X: Any,
    path: str | Any,
    *,
    obs: Any = None,
    var: Any = None,
    n_features: int | None = None,
    overwrite: bool = False,
    chunk_nnz: int = 1 << 22,
) -> Any:
    """Write a sparse matrix larger than memory as an AnnData ``.h5ad`` file or zarr store, atomically.

    ``X``: a scipy.sparse matrix, a dask array of CSR blocks or an iterable
    of CSR row blocks (then ``n_features``). It is streamed into AnnData's
    CSR encoding (``X/data``, ``X/indices``, ``X/indptr``; ``encoding-type:
    csr_matrix``) block by block; ``obs`` and ``var`` (pandas DataFrames,
    default: indices ``"0", "1", ...``) are written by anndata's own
    ``write_elem``. The file is written under a hidden name and renamed into
    place; an existing path is replaced only with ``overwrite`` and only if
    bigdr wrote it.
    """
    import os

    import pandas as pd
    from anndata.io import write_elem

    from .csr import append_csr, as_blocks
    from .outputs import check_output, publish, remove, temporary_sibling

    path = os.fspath(path)
    h5ad = path.lower().rstrip("/").endswith(".h5ad")
    blocks, p = as_blocks(X, n_features)
    final = check_output(path, "anndata", overwrite=overwrite)
    tmp = temporary_sibling(final)
    root: Any = None
    try:
        if h5ad:
            import h5py

            root = h5py.File(tmp, "w")
        else:
            import zarr

            root = zarr.open_group(str(tmp), mode="w")
        group = root.create_group("X")
        n = append_csr(group, blocks, p, chunk_nnz)
        group.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": [n, p]})
        obs = pd.DataFrame(index=pd.RangeIndex(n).astype(str)) if obs is None else obs
        var = pd.DataFrame(index=pd.RangeIndex(p).astype(str)) if var is None else var
        if len(obs) != n or len(var) != p:
            raise ValueError(f"obs has {len(obs)} rows and var {len(var)}; the matrix is {n} x {p}.")
        write_elem(root, "obs", obs)
        write_elem(root, "var", var)
        for name in ("layers", "obsm", "obsp", "varm", "varp", "uns"):
            write_elem(root, name, {})
        root.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0", "bigdr": True})
        if h5ad:
            root.close()
        else:
            import zarr

            zarr.consolidate_metadata(str(tmp))
        publish(tmp, final, overwrite)
    except BaseException:
        if h5ad and root is not None:
            root.close()
        if tmp.exists():
            remove(tmp)
        raise
    return final
