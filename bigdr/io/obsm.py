"""Embeddings written into ``obsm`` of an AnnData zarr store, where anndata and scanpy find them.

:func:`write_obsm` writes under a hidden name inside ``obsm``, renames it into
place and then updates the store's consolidated metadata (one file replaced
atomically), so ``anndata.read_zarr`` sees the new element whole or not at
all. An existing ``obsm[key]`` is replaced only with ``overwrite`` and only if
bigdr wrote it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import dask.array as da

from .anndata import is_anndata, n_obs

#: What bigdr marks its ``obsm`` arrays with (so ``overwrite`` replaces only those).
MARK = "bigdr"


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

    from ..runtime.compute import compute
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
