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


#: A backed view's cells and genes as positions in its file (None: all of that axis).
Selection = tuple[np.ndarray | None, np.ndarray | None] | None


def anndata_source(adata: Any, element: str | None = None) -> tuple[Any, str | None]:
    """What an AnnData object's element is read from, and the element to read there.

    ``(filename, element)`` for a backed object (a view of one is restricted
    to its cells and genes by :func:`view_selection` and :func:`take_view`),
    ``(matrix, None)`` for one in memory (:func:`anndata_matrix`; a view in
    memory is already its subset).
    """
    if getattr(adata, "isbacked", False):
        return str(adata.filename), element or "X"
    return anndata_matrix(adata, element), None


def view_selection(adata: Any) -> Selection:
    """The positions in its file of a backed view's cells and genes, None for a whole or in-memory object.

    Found by name: the view's ``obs_names`` and ``var_names`` looked up in the
    file's own indices (anndata exposes no public index of a view), so names
    must be unique in the file, as anndata asks. Cells must keep the file's
    order, since rows are read block by block in that order.
    """
    if not (getattr(adata, "is_view", False) and getattr(adata, "isbacked", False)):
        return None
    import h5py
    import pandas as pd

    root = _root(str(adata.filename))
    try:
        picked: list[np.ndarray | None] = []
        for axis, names in (("obs", adata.obs_names), ("var", adata.var_names)):
            group = root[axis]
            stored = _column(group[group.attrs.get("_index", "_index")])
            if len(names) == len(stored) and bool(np.all(np.asarray(names) == np.asarray(stored))):
                picked.append(None)
                continue
            index = pd.Index(stored)
            if not index.is_unique:
                raise ValueError(
                    f"The view's {axis} names cannot be found in {adata.filename}: its {axis} names are not unique. "
                    f"Select by position on the matrix instead, or write the subset to a file of its own "
                    f"(adata[...].copy(filename=...))."
                )
            positions = index.get_indexer(names)
            if (positions < 0).any():
                raise ValueError(f"Some of the view's {axis} names are not in {adata.filename}.")
            picked.append(positions)
    finally:
        if isinstance(root, h5py.File):
            root.close()
    rows = picked[0]
    if rows is not None and np.any(np.diff(rows) <= 0):
        raise ValueError(
            "The view takes cells out of the file's order; bigdr reads a backed file's rows in order. "
            "Select them in the file's order (e.g. a boolean mask, or sorted positions)."
        )
    return rows, picked[1]


def anndata_input(X: Any, dataset: str | None) -> tuple[Any, str | None, Selection, Any]:
    """What a reader reads for input ``X``: ``(source, element, selection, genes)``.

    For an AnnData object its matrix or file and element (:func:`anndata_source`)
    and a backed view's cells and genes (:func:`view_selection`); other input
    as it is. ``genes``: where its columns' genes are named (:func:`var_source`).
    """
    genes = var_source(X, dataset)
    if not is_anndata_object(X):
        return X, dataset, None, genes
    selection = view_selection(X)
    return (*anndata_source(X, dataset), selection, genes)


def _take(block: Any, rows: np.ndarray | None = None, columns: np.ndarray | None = None) -> Any:
    block = block if rows is None else block[rows]
    return block if columns is None else block[:, columns]


def take_view(arr: da.Array, selection: Selection) -> da.Array:
    """``arr`` (row blocks, dense or scipy.sparse) restricted to a view's cells and genes, block by block.

    Each block keeps the rows it holds of the view (blocks holding none are
    dropped) and the view's columns, so nothing outside the view is held
    beyond the block being read.
    """
    if selection is None:
        return arr
    rows, columns = selection
    width = arr.shape[1] if columns is None else len(columns)
    if rows is None:
        return da.map_blocks(_take, arr, columns=columns, chunks=(arr.chunks[0], (width,)), meta=arr._meta)
    bounds = np.cumsum((0, *arr.chunks[0]))
    parts = []
    for i, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        lo, hi = np.searchsorted(rows, [start, stop])
        if hi > lo:
            local = None if hi - lo == stop - start else rows[lo:hi] - start
            parts.append(
                arr.blocks[i].map_blocks(
                    _take, rows=local, columns=columns, chunks=((int(hi - lo),), (width,)), meta=arr._meta
                )
            )
    if not parts:
        raise ValueError("The AnnData view holds no cells.")
    return da.concatenate(parts, axis=0)


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


#: dask array name -> the names of its columns' genes, for arrays read from AnnData: the names
#: themselves (an object in memory) or ``(path, positions)`` (a file, its var index read when asked).
_VAR_NAMES: dict[str, Any] = {}
#: Arrays whose genes are remembered (each may hold the names of 40,000 genes).
VAR_NAMES_KEPT = 256


def per_gene(dataset: str | None) -> bool:
    element = dataset or "X"
    return element == "X" or element.startswith("layers/")


def var_source(X: Any, dataset: str | None = None) -> Any:
    """Where the genes of the columns read from ``X`` are named; None unless ``X`` is AnnData (an object,
    a view, or the path of an ``.h5ad`` file or AnnData zarr store) read at ``X`` or a layer."""
    if not per_gene(dataset):
        return None
    if is_anndata_object(X):
        return np.asarray(X.var_names.astype(str), dtype=object)
    if isinstance(X, (str, Path)) and is_anndata(str(X)):
        return (str(X), None)
    return None


def note_var_names(arr: da.Array, source: Any, before: Any = None) -> da.Array:
    """Record that ``arr``'s columns are the genes ``source`` names (:func:`var_source`), or those of
    ``before``, the array it was made from."""
    if source is None and isinstance(before, da.Array):
        source = _VAR_NAMES.get(before.name)
    if source is not None:
        _VAR_NAMES[arr.name] = source
        while len(_VAR_NAMES) > VAR_NAMES_KEPT:  # read by the fit that follows; the oldest go
            del _VAR_NAMES[next(iter(_VAR_NAMES))]
    return arr


def var_names_of(arr: Any) -> np.ndarray | None:
    """The genes of ``arr``'s columns (object array), if it was read from AnnData; else None."""
    source = _VAR_NAMES.get(arr.name) if isinstance(arr, da.Array) else None
    if not isinstance(source, tuple):
        return source
    path, columns = source
    names = var_frame(path, [])[0]
    return names if columns is None else names[columns]


def var_frame(path: str, columns: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The var index of an AnnData file or store (object array) and those of ``columns`` it has,
    read with anndata's own reader (no matrix is read)."""
    import h5py

    root = _root(path)
    try:
        var = root["var"]
        names = np.asarray([str(v) for v in _column(var[var.attrs.get("_index", "_index")])], dtype=object)
        found = {c: np.asarray(_column(var[c])) for c in columns if c in var}
    finally:
        if isinstance(root, h5py.File):
            root.close()
    return names, found


def _column(node: Any) -> Any:
    """A column of an AnnData dataframe as stored: strings and booleans read directly (anndata, which
    imports zarr, is not needed to fit from an ``.h5ad`` file); encoded ones (categoricals, nullable) by
    anndata's own reader."""
    if hasattr(node, "shape") and hasattr(node, "dtype"):
        if hasattr(node, "asstr") and node.dtype.kind in "OS":  # h5py strings
            return node.asstr()[:]
        return node[:]
    from anndata.io import read_elem

    return read_elem(node)


def select_genes(arr: da.Array, path: str, genes: Any) -> da.Array:
    """``arr``, read whole from the AnnData at ``path``, restricted block by block to ``genes``: the name
    of a boolean var column (scanpy's ``mask_var``, such as ``"highly_variable"``) or gene names in the
    order wanted (a fitted model's ``feature_names_in_``). Their names are recorded with the result."""
    import pandas as pd

    by_column = isinstance(genes, str)
    names, found = var_frame(path, [genes] if by_column else [])
    if arr.shape[1] != len(names):
        raise ValueError(f"Genes are selected among all {len(names):,} of {path!r}; this input has {arr.shape[1]}.")
    if by_column:
        if genes not in found:
            raise ValueError(f"{path!r} has no var[{genes!r}] to select genes by (scanpy's mask_var).")
        if found[genes].dtype != bool or not found[genes].any():
            raise ValueError(f"var[{genes!r}] of {path!r} must be a boolean column that selects some gene.")
        columns = np.flatnonzero(found[genes])
    else:
        index = pd.Index(names)
        if not index.is_unique:
            raise ValueError(f"{path!r} repeats var names, so genes cannot be selected by name; make them unique.")
        columns = index.get_indexer(pd.Index(np.asarray(genes, dtype=object)))
        if (columns < 0).any():
            missing = np.asarray(genes, dtype=object)[columns < 0]
            raise ValueError(
                f"{path!r} lacks {len(missing):,} of the model's {len(columns):,} genes (such as {missing[0]!r}); "
                f"the model needs the genes it was fitted on."
            )
    return note_var_names(take_view(arr, (None, columns)), (path, columns))


def unused_highly_variable(X: Any, arr: da.Array) -> tuple[int, int] | None:
    """``(highly variable, all)`` gene counts when every gene of an AnnData input with scanpy's
    ``var["highly_variable"]`` is read, which scanpy's ``sc.pp.pca`` would restrict to those; else None."""
    if is_anndata_object(X):  # a view is a selection of its own: not second-guessed
        if X.is_view or "highly_variable" not in X.var.columns:
            return None
        flags = np.asarray(X.var["highly_variable"], dtype=bool)
    else:
        source = _VAR_NAMES.get(arr.name)
        if not isinstance(source, tuple) or source[1] is not None:
            return None
        flags = var_frame(source[0], ["highly_variable"])[1].get("highly_variable", np.ones(1, dtype=bool))
    flags = flags.astype(bool)
    return (int(flags.sum()), flags.size) if not flags.all() else None


def model_genes(model: Any, X: da.Array, path: Any, dataset: str | None, mask_var: str | None = None) -> da.Array:
    """The genes of ``X``, read whole from ``path``, that ``model`` uses, chosen as scanpy chooses them.

    A model fitted on named genes (``feature_names_in_``) takes those, by
    name, from an AnnData input. A fit takes ``var[mask_var]`` (a boolean
    column); by default, for the methods that write loadings into ``varm``
    (PCA, TruncatedSVD), ``var["highly_variable"]`` when the input has it, as
    ``sc.pp.pca`` does; ``"none"``: every gene. Other inputs are ``X`` as it is.
    """
    path = str(path)
    anndata = is_anndata(path) and per_gene(dataset)
    fitted = getattr(model, "feature_names_in_", None)
    if fitted is not None:
        same = anndata and np.array_equal(var_frame(path, [])[0], fitted)
        return select_genes(X, path, fitted) if anndata and not same else X
    if mask_var == "none":
        return X
    if mask_var is not None:
        if not anndata:
            raise ValueError("--mask-var selects genes of an AnnData input's X or layer; this input is not one.")
        return select_genes(X, path, mask_var)
    loadings = any(name.startswith("varm/") for name in model._anndata_names("X_pca"))
    if anndata and loadings and "highly_variable" in var_frame(path, ["highly_variable"])[1]:
        return select_genes(X, path, "highly_variable")
    return X
