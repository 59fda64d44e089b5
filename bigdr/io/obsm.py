"""Embeddings written into an AnnData store (zarr or ``.h5ad``), where anndata and scanpy find them.

:func:`write_obsm` writes ``obsm/<key>`` and, given the fitted model, the
entries scanpy keeps next to it (``varm["PCs"]`` and ``uns["pca"]`` for a PCA,
``uns["diffmap_evals"]`` for a diffusion map: the model's
``_anndata_parts``). Each element is written under a hidden name in its
parent group and renamed into place; in a zarr store the consolidated
metadata is then updated (one file replaced atomically), so
``anndata.read_zarr`` sees each new element whole or not at all. An existing
element is replaced only with ``overwrite`` and only if bigdr wrote it; every
target is checked before any work (:func:`check_obsm`).

The small entries are written by anndata's own ``write_elem``, so their
encoding is anndata's; the embedding, which may have millions of rows, is
streamed block by block.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from .anndata import is_anndata, n_obs

#: What bigdr marks the elements it writes with (so ``overwrite`` replaces only those).
MARK = "bigdr"


def _is_h5ad(store: str) -> bool:
    return store.lower().rstrip("/").endswith(".h5ad")


@contextmanager
def _open(store: str, mode: Any) -> Iterator[Any]:
    if _is_h5ad(store):
        import h5py

        with h5py.File(store, mode) as f:
            yield f
    else:
        import zarr

        yield zarr.open_group(store, mode=mode)


def check_obsm(store: str, key: str, overwrite: bool = False, also: Iterable[str] = ()) -> Path:
    """Check, before any work, that ``obsm/<key>`` (and the elements ``also``) of ``store`` may be written.

    ``also``: further element paths such as ``"varm/PCs"`` or ``"uns/pca"``.
    Returns the path of ``obsm/<key>`` (inside the file for ``.h5ad``).
    """
    if not isinstance(key, str) or not key or "/" in key or key.startswith("."):
        raise ValueError(f"obsm key must be a plain name such as 'X_isomap'; got {key!r}.")
    if not is_anndata(store):
        raise ValueError(f"{store!r} is not an AnnData store (.h5ad file or AnnData zarr store); obsm cannot go there.")
    if _is_h5ad(store) and not os.access(store, os.W_OK):
        raise PermissionError(f"{store} is not writable; obsm[{key!r}] cannot be written into it.")
    with _open(store, "r") as root:
        for name in (f"obsm/{key}", *also):
            if name not in root:
                continue
            shown = "{}[{!r}]".format(*name.split("/", 1))
            if not overwrite:
                raise FileExistsError(f"{shown} exists in {store}; pass overwrite=True (--overwrite) to replace it.")
            if not root[name].attrs.get(MARK):
                raise FileExistsError(
                    f"{shown} in {store} was not written by bigdr, so it is not replaced; choose another key."
                )
    return Path(store) / "obsm" / key


def write_obsm(embedding: Any, store: str | os.PathLike, key: str, overwrite: bool = False, model: Any = None) -> None:
    """Write ``embedding`` (n_obs rows) into ``obsm/<key>`` of an AnnData store, atomically.

    Parameters
    ----------
    embedding : array-like (n_obs, k)
        numpy or dask; streamed in row blocks.
    store : path
        An ``.h5ad`` file or an AnnData zarr store.
    key : str
        The ``obsm`` key, such as ``"X_pca"``.
    overwrite : bool
        Replace elements bigdr wrote before (never others).
    model : fitted estimator, optional
        Also write what scanpy keeps next to this embedding: for PCA
        ``varm["PCs"]`` and ``uns["pca"]`` (``variance``, ``variance_ratio``,
        ``params``); for a diffusion map the trivial first component in
        ``obsm["X_diffmap"]`` and ``uns["diffmap_evals"]``, and, for
        ``kernel="umap"`` on all rows, its graph as scanpy's ``pp.neighbors``
        leaves it (``obsp["connectivities"]``, ``obsp["distances"]``,
        ``uns["neighbors"]``); for other methods ``uns[key]`` with the parameters.
    """
    from .read import as_array

    store = os.fspath(store)
    Y, entries = (embedding, {}) if model is None else model._anndata_parts(embedding, key)
    entries = _without_others(store, entries, getattr(model, "_anndata_optional", ()), overwrite)
    entries = _place_loadings(store, entries, getattr(model, "feature_names_in_", None))
    check_obsm(store, key, overwrite, also=list(entries))
    Yd = as_array(Y, name="embedding", min_rows=1)
    rows = n_obs(store)
    if Yd.shape[0] != rows:
        raise ValueError(f"The embedding has {Yd.shape[0]} rows; the AnnData store has {rows} cells.")
    if _is_h5ad(store):
        _write_h5ad(store, key, Yd, entries)
    else:
        _write_zarr(store, key, Yd, entries, overwrite)


def _without_others(store: str, entries: dict[str, Any], optional: Iterable[str], overwrite: bool) -> dict[str, Any]:
    """``entries`` less the ``optional`` ones (all of them) when the store already holds one that bigdr
    may not replace (not bigdr's, or no ``overwrite``), with a warning that names it: a user's own
    neighbours stay, whole."""
    import warnings

    optional = tuple(optional)
    if not optional or not is_anndata(store):
        return entries
    kept = []
    with _open(store, "r") as root:
        for name in optional:
            if name in entries and name in root and not (overwrite and root[name].attrs.get(MARK)):
                kept.append(name)
    if kept:
        warnings.warn(
            f"{', '.join(kept)} already in {store}: kept as they are, so they do not describe the graph of this "
            f"embedding; remove them (or pass overwrite=True where bigdr wrote them) to have bigdr's written.",
            UserWarning,
            stacklevel=3,
        )
    return {name: value for name, value in entries.items() if not (kept and name in optional)}  # all or none


def _dict_attrs(group: Any) -> None:
    if not group.attrs.get("encoding-type"):
        group.attrs.update({"encoding-type": "dict", "encoding-version": "0.1.0"})


def _stream(Y: da.Array, target: Any, lock: bool) -> None:
    from ..runtime.compute import compute

    chunks = (min(Y.shape[0], max(Y.chunks[0])), Y.shape[1])
    (_,) = compute(da.store(Y.rechunk(chunks), target, lock=lock, compute=False))


def _write_each(
    root: Any,
    key: str,
    Y: Any,
    entries: dict[str, Any],
    write_array: Callable[[Any, str], Any],
    place: Callable[[str, Any, str, str], None],
    discard: Callable[[str, Any, str], None],
) -> None:
    """``obsm/<key>`` and ``entries``, each under a hidden name in its parent group, marked, then placed.

    ``write_array(parent, name)`` writes the embedding and returns it;
    ``place(parent_name, parent, hidden, leaf)`` renames into place;
    ``discard`` removes a hidden element left by a failure.
    """
    from anndata.io import write_elem

    hidden: list[tuple[str, Any, str]] = []
    try:
        for name, value in [(f"obsm/{key}", Y), *entries.items()]:
            parent_name, leaf = name.split("/", 1)
            parent = root.require_group(parent_name)
            _dict_attrs(parent)
            tmp = f".bigdr-{leaf}-{uuid.uuid4().hex[:8]}"
            hidden.append((parent_name, parent, tmp))
            if value is Y:
                write_array(parent, tmp).attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
            else:
                write_elem(parent, tmp, value)
            parent[tmp].attrs[MARK] = True
            place(parent_name, parent, tmp, leaf)
    finally:
        for parent_name, parent, tmp in hidden:
            discard(parent_name, parent, tmp)


def _write_zarr(store: str, key: str, Y: da.Array, entries: dict[str, Any], overwrite: bool) -> None:
    import zarr

    from .outputs import publish, remove

    def write_array(parent: Any, name: str) -> Any:
        chunks = (min(Y.shape[0], max(Y.chunks[0])), Y.shape[1])
        target = parent.create_array(name, shape=Y.shape, chunks=chunks, dtype=Y.dtype)
        _stream(Y, target, lock=False)
        return target

    def place(parent_name: str, parent: Any, tmp: str, leaf: str) -> None:
        publish(Path(store) / parent_name / tmp, Path(store) / parent_name / leaf, overwrite)
        _consolidate(Path(store), parent_name)

    def discard(parent_name: str, parent: Any, tmp: str) -> None:
        if (Path(store) / parent_name / tmp).exists():
            remove(Path(store) / parent_name / tmp)

    root = zarr.open_group(store, mode="r+", use_consolidated=False)  # to find the hidden names just written
    _write_each(root, key, Y, entries, write_array, place, discard)


def _write_h5ad(store: str, key: str, Y: da.Array, entries: dict[str, Any]) -> None:
    """Stage the embedding beside the file, then copy it in with the file opened for writing.

    The embedding is usually computed from the same file (``X``, a layer,
    ``obsm/X_pca``), and HDF5 refuses a file open for reading and writing at
    once; the staged copy, streamed, costs one write and one read of the
    embedding, small next to the input.
    """
    import gc

    import h5py
    import zarr

    from .outputs import remove, temporary_sibling

    staged = temporary_sibling(Path(store))
    chunks = (min(Y.shape[0], max(Y.chunks[0]), 65_536), Y.shape[1])

    def write_array(parent: Any, name: str) -> Any:
        target = parent.create_dataset(name, shape=Y.shape, chunks=chunks, dtype=Y.dtype)
        for start in range(0, Y.shape[0], chunks[0]):
            target[start : start + chunks[0]] = copy[start : start + chunks[0]]
        return target

    def place(parent_name: str, parent: Any, tmp: str, leaf: str) -> None:
        if leaf in parent:
            del parent[leaf]  # checked before any work: bigdr wrote it and overwrite was given
        parent.move(tmp, leaf)  # a link renamed: readers see the old element or the new one

    def discard(parent_name: str, parent: Any, tmp: str) -> None:
        if tmp in parent:
            del parent[tmp]

    try:
        copy: Any = zarr.create_array(str(staged), shape=Y.shape, chunks=chunks, dtype=Y.dtype)
        _stream(Y, copy, lock=False)
        gc.collect()  # the readers' file handles, before HDF5 is asked to open the file for writing
        with h5py.File(store, "r+") as f:
            _write_each(f, key, Y, entries, write_array, place, discard)
    finally:
        if staged.exists():
            remove(staged)


def _replace_json(path: Path, value: dict) -> None:
    tmp = path.with_name(f".{path.name}.bigdr-{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(value, indent=2))
    os.replace(tmp, path)


def _hidden(relative: Path) -> bool:
    return any(piece.startswith(".bigdr-") for piece in relative.parts)


def _consolidate(store: Path, name: str) -> None:
    """Add the element ``name`` (an array or a group, with everything inside) to the store's
    consolidated metadata, where it has some (anndata writes it).

    Readers that trust consolidated metadata (anndata does) see only what it
    lists, so the new element appears when this one file is replaced, atomically.
    """
    v2 = store / ".zmetadata"
    if v2.is_file():
        meta = json.loads(v2.read_text())
        entries = {k: v for k, v in meta["metadata"].items() if not k.startswith(f"{name}/")}
        for part in sorted((store / name).rglob(".z*")):
            if part.name in (".zattrs", ".zarray", ".zgroup") and not _hidden(part.relative_to(store)):
                entries[part.relative_to(store).as_posix()] = json.loads(part.read_text())
        meta["metadata"] = dict(sorted(entries.items()))  # zarr nests the entries in sorted order
        _replace_json(v2, meta)
        return
    root = store / "zarr.json"
    if root.is_file():
        meta = json.loads(root.read_text())
        consolidated = meta.get("consolidated_metadata")
        if consolidated:
            old = consolidated.setdefault("metadata", {})
            entries = {k: v for k, v in old.items() if k != name and not k.startswith(f"{name}/")}
            for part in sorted((store / name).rglob("zarr.json")):
                if _hidden(part.relative_to(store)):
                    continue
                node = part.parent.relative_to(store).as_posix()
                entries[node] = json.loads(part.read_text())
            consolidated["metadata"] = dict(sorted(entries.items()))
            _replace_json(root, meta)


def _place_loadings(store: str, entries: dict[str, Any], genes: Any) -> dict[str, Any]:
    """``varm`` entries (a row per gene the model was fitted on, ``genes``) as a row per gene of ``store``.

    Genes outside the fit get zeros and ``uns[...]["params"]`` names the genes
    used, as scanpy's ``sc.pp.pca(mask_var=...)`` leaves them:
    ``mask_var="highly_variable"`` when they are the store's
    ``var["highly_variable"]``, else the boolean mask. Loadings that cannot be
    placed (no gene names and another width) are refused before any work.
    """
    import pandas as pd

    from .anndata import var_frame

    varm = [name for name in entries if name.startswith("varm/")]
    if not varm or not is_anndata(store):
        return entries
    names, found = var_frame(store, ["highly_variable"])
    out = dict(entries)
    for name in varm:
        rows = np.asarray(entries[name])
        if genes is None:
            if rows.shape[0] != len(names):
                raise ValueError(
                    f"The model's loadings cover {rows.shape[0]:,} features and {store} has {len(names):,} genes; "
                    f"bigdr cannot tell which genes they are. Fit the model on the AnnData itself (its path, the "
                    f"object, or a view such as adata[:, adata.var['highly_variable']]), not on its matrix."
                )
            continue
        if len(genes) == len(names) and np.array_equal(np.asarray(genes, dtype=object), names):
            continue  # the store's own genes, in its order (repeated names included)
        index = pd.Index(names)
        if not index.is_unique:
            raise ValueError(f"{store} repeats var names, so loadings cannot be placed by gene; make them unique.")
        positions = index.get_indexer(pd.Index(genes))
        if (positions < 0).any():
            missing = genes[positions < 0][0]
            raise ValueError(f"The model was fitted on genes {store} does not have (such as {missing!r}).")
        full = np.zeros((len(names), rows.shape[1]), dtype=rows.dtype)
        full[positions] = rows
        out[name] = full
        mask = np.zeros(len(names), dtype=bool)
        mask[positions] = True
        uns = scanpy_pca_names(name.split("/", 1)[1] if name != "varm/PCs" else "X_pca")[1]
        if uns in out and not mask.all():
            hvg = found.get("highly_variable")
            by_hvg = hvg is not None and np.array_equal(np.asarray(hvg, dtype=bool), mask)
            params = {**out[uns]["params"], "use_highly_variable": by_hvg}
            params["mask_var"] = "highly_variable" if by_hvg else mask
            out[uns] = {**out[uns], "params": params}
    return out


def scanpy_pca_names(key: str) -> list[str]:
    """Where scanpy's ``sc.pp.pca`` keeps loadings and variances next to ``obsm[key]``:
    ``varm["PCs"]`` and ``uns["pca"]`` for ``"X_pca"``, else ``key`` for all three (its ``key_added``)."""
    return ["varm/PCs", "uns/pca"] if key == "X_pca" else [f"varm/{key}", f"uns/{key}"]


def scanpy_pca_entries(model: Any, key: str, zero_center: bool) -> dict[str, Any]:
    """Loadings in ``varm`` (n_vars x k) and ``uns`` (variance, variance_ratio, params) as scanpy writes them,
    from a fitted PCA or TruncatedSVD (both have scikit-learn's attributes)."""
    varm, uns = scanpy_pca_names(key)
    components, variance, ratio = model.components_, model.explained_variance_, model.explained_variance_ratio_
    params = {"zero_center": zero_center, "use_highly_variable": False, **model._anndata_params()}
    return {
        varm: np.ascontiguousarray(np.asarray(components).T),
        uns: {"params": params, "variance": np.asarray(variance), "variance_ratio": np.asarray(ratio)},
    }
