"""AnnData stores: ``.h5ad`` files and AnnData zarr stores, read lazily; embeddings written into ``obsm``.

AnnData keeps a cells x genes matrix ``X`` (dense, or CSR as a group of
``data``, ``indices`` and ``indptr`` with ``encoding-type: csr_matrix``),
``layers/<name>`` of the same shape and ``obsm/<name>`` (per-cell matrices
such as ``X_pca``). :func:`open_anndata` reads any of them as a dask array
chunked by rows without loading the matrix: dense elements through zarr or
h5py, CSR ones block by block (``indptr`` read once, each block's slice of
``data`` and ``indices`` densified in its task). :func:`write_obsm` puts an
embedding into ``obsm`` of an AnnData zarr store, written under a hidden name
and moved in by a rename, so ``anndata.read_zarr`` (and scanpy) see it whole
or not at all.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np

#: What bigdr marks its ``obsm`` arrays with (so ``overwrite`` replaces only those).
MARK = "bigdr"


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


def _csr_rows(path: str, element: str, start: int, stop: int, n_cols: int) -> np.ndarray:
    node = _element(_root(path), path, element)
    indptr = np.asarray(node["indptr"][start : stop + 1], dtype=np.int64)
    lo, hi = int(indptr[0]), int(indptr[-1])
    data = np.asarray(node["data"][lo:hi])
    indices = np.asarray(node["indices"][lo:hi], dtype=np.int64)
    out = np.zeros((stop - start, n_cols), dtype=np.float32 if data.dtype == np.float32 else np.float64)
    rows = np.repeat(np.arange(stop - start), np.diff(indptr))
    np.add.at(out, (rows, indices), data)
    return out


def open_anndata(path: str, element: str = "X", chunk_bytes: int = 128 << 20) -> Any:
    """An element of an AnnData store: the zarr array or h5py dataset when dense, a dask array when CSR."""
    root = _root(path)
    node = _element(root, path, element)
    kind = node.attrs.get("encoding-type", "array")
    if kind == "array" and hasattr(node, "shape"):
        return node
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


def check_obsm(store: str, key: str, overwrite: bool = False) -> Path:
    """Check, before any work, that ``obsm/<key>`` of ``store`` may be written; its path."""
    if not isinstance(key, str) or not key or "/" in key or key.startswith("."):
        raise ValueError(f"obsm key must be a plain name such as 'X_isomap'; got {key!r}.")
    if not is_anndata(store) or store.lower().rstrip("/").endswith(".h5ad"):
        raise ValueError(
            f"{store!r} is not an AnnData zarr store; obsm is written into zarr stores only "
            f"(convert once: anndata.read_h5ad(path).write_zarr('cells.zarr'))."
        )
    import zarr

    group: Any = zarr.open_group(store, mode="r")
    final = Path(store) / "obsm" / key
    if "obsm" in group and key in group["obsm"]:
        if not overwrite:
            raise FileExistsError(f"obsm[{key!r}] exists in {store}; pass overwrite=True (--overwrite) to replace it.")
        if not group["obsm"][key].attrs.get(MARK):
            raise FileExistsError(
                f"obsm[{key!r}] in {store} was not written by bigdr, so it is not replaced; choose another key."
            )
    return final


def write_obsm(embedding: Any, store: str | os.PathLike, key: str, overwrite: bool = False) -> None:
    """Write ``embedding`` (n_obs rows) into ``obsm/<key>`` of an AnnData zarr store, atomically.

    The array is written under a hidden name inside ``obsm`` and renamed into
    place; an existing ``obsm/<key>`` is replaced only with ``overwrite`` and
    only when bigdr wrote it.
    """
    import zarr

    from .._compute import compute
    from .outputs import publish
    from .read import as_array

    store = os.fspath(store)
    final = check_obsm(store, key, overwrite)
    Y = as_array(embedding, name="embedding", min_rows=1)
    rows = n_obs(store)
    if Y.shape[0] != rows:
        raise ValueError(f"The embedding has {Y.shape[0]} rows; the AnnData store has {rows} cells.")
    group = zarr.open_group(store, mode="r+")
    obsm = group.require_group("obsm")
    if not obsm.attrs.get("encoding-type"):
        obsm.attrs.update({"encoding-type": "dict", "encoding-version": "0.1.0"})
    hidden = f".bigdr-{key}-{uuid.uuid4().hex[:8]}"
    chunks = (min(Y.shape[0], max(Y.chunks[0])), Y.shape[1])
    target: Any = obsm.create_array(hidden, shape=Y.shape, chunks=chunks, dtype=Y.dtype)
    try:
        (_,) = compute(da.store(Y.rechunk(chunks), target, lock=False, compute=False))
        target.attrs.update({"encoding-type": "array", "encoding-version": "0.2.0", MARK: True})
        publish(Path(store) / "obsm" / hidden, final, overwrite)
        _consolidate(Path(store), f"obsm/{key}")
    finally:
        leftover = Path(store) / "obsm" / hidden
        if leftover.exists():
            import shutil

            shutil.rmtree(leftover)


def _replace_json(path: Path, value: dict) -> None:
    tmp = path.with_name(f".{path.name}.bigdr-{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(value, indent=2))
    os.replace(tmp, path)


def _consolidate(store: Path, name: str) -> None:
    """Add the array ``name`` to the store's consolidated metadata, where it has some (anndata writes it).

    Readers that trust consolidated metadata (anndata does) see only what it
    lists, so the new array appears when this one file is replaced, atomically.
    """
    v2 = store / ".zmetadata"
    if v2.is_file():
        meta = json.loads(v2.read_text())
        for part in (".zattrs", ".zarray"):
            if (store / name / part).is_file():
                meta["metadata"][f"{name}/{part}"] = json.loads((store / name / part).read_text())
        meta["metadata"] = dict(sorted(meta["metadata"].items()))  # zarr nests the entries in sorted order
        _replace_json(v2, meta)
        return
    root = store / "zarr.json"
    if root.is_file():
        meta = json.loads(root.read_text())
        consolidated = meta.get("consolidated_metadata")
        if consolidated:
            entries = consolidated.setdefault("metadata", {})
            entries[name] = json.loads((store / name / "zarr.json").read_text())
            consolidated["metadata"] = dict(sorted(entries.items()))
            _replace_json(root, meta)
