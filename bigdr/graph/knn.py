"""kNN graphs of all rows: two n x k arrays chunked like the rows, storable in zarr.

``indices`` (int64) and ``distances`` (float32); scipy.sparse matrices are
built from them only inside the solver that needs them
(:func:`bigdr.graph.sparse.to_csr`).
"""

from __future__ import annotations

from typing import Any

import dask
import dask.array as da
import numpy as np

from ..io import as_array, from_numpy, rows_in_memory
from ..runtime.compute import compute
from .backends import CALIBRATION_ROWS
from .neighbors import (
    BACKENDS,
    NeighborIndex,
    as_records,
    blockwise_query,
    calibration_sample,
    check_k,
    check_method,
    check_metric,
    choose_method,
    drop_self,
    far_rows,
    query_row_bytes,
    record_dtype,
    resolve_search_options,
    self_graph_recall,
    split_for_balance,
    split_records,
    warn_short_recall,
)


class KNNGraph:
    """The k nearest neighbours of every row: two n x k dask arrays chunked like the rows.

    ``indices[i, j]`` is the j-th nearest other row of row i (ascending
    distance), ``distances[i, j]`` its distance (float32). A row is never its
    own neighbour; exact duplicates are neighbours at distance 0.

    ``index`` is the :class:`NeighborIndex` on all rows the graph was found
    with, when the back end built one (``kdtree``, ``brute``, ``faiss``), so a
    method that also queries new rows against the same rows does not build it
    twice; ``None`` otherwise and after :meth:`from_zarr`.

    ``recall`` is the estimated mean fraction of each row's true k nearest that
    the graph holds, measured on sampled rows against an exact search (1.0
    for the exact back ends; ``None`` when not measured: a partitioned graph,
    one given by the user or read back with :meth:`from_zarr`).
    """

    def __init__(
        self,
        indices: da.Array,
        distances: da.Array,
        metric: str = "euclidean",
        method: str | None = None,
        index: NeighborIndex | None = None,
    ) -> None:
        if indices.shape != distances.shape or indices.ndim != 2:
            raise ValueError(f"indices {indices.shape} and distances {distances.shape} must be equal n x k shapes.")
        self.indices, self.distances, self.metric, self.method = indices, distances, metric, method
        self.index = index
        self.recall: float | None = None if index is None else getattr(index, "recall_", 1.0 if index.exact else None)

    @property
    def n_samples(self) -> int:
        return int(self.indices.shape[0])

    @property
    def n_neighbors(self) -> int:
        return int(self.indices.shape[1])

    def __repr__(self) -> str:
        return (
            f"KNNGraph(n_samples={self.n_samples}, n_neighbors={self.n_neighbors}, metric={self.metric!r}, "
            f"method={self.method!r})"
        )

    def compute(self) -> tuple[np.ndarray, np.ndarray]:
        """Both arrays in memory (n x k each)."""
        ind, dist = compute(self.indices, self.distances)
        return ind, dist

    def persist(self) -> KNNGraph:
        """Compute once and keep in memory (or on the cluster's workers)."""
        ind, dist = dask.persist(self.indices, self.distances)
        return KNNGraph(ind, dist, self.metric, self.method, self.index)

    def to_zarr(self, path: str, overwrite: bool = False) -> str:
        """Write both arrays to a zarr group atomically."""
        from ..io import write_zarr

        attrs = {
            "kind": "bigdr-knn-graph",
            "metric": self.metric,
            "method": self.method,
            "n_neighbors": self.n_neighbors,
        }
        return str(
            write_zarr({"indices": self.indices, "distances": self.distances}, path, attrs=attrs, overwrite=overwrite)
        )

    @classmethod
    def from_zarr(cls, path: str) -> KNNGraph:
        """Open a graph written by :meth:`to_zarr` (lazily)."""
        import zarr

        from ..io import open_zarr

        group = zarr.open_group(str(path), mode="r")
        attrs: dict[str, Any] = dict(group.attrs)
        if attrs.get("kind") != "bigdr-knn-graph":
            raise ValueError(f"{path!r} is not a kNN graph written by bigdr (no 'bigdr-knn-graph' marker).")
        ind = da.from_zarr(open_zarr(str(path), dataset="indices"))
        dist = da.from_zarr(open_zarr(str(path), dataset="distances"))
        return cls(ind, dist, attrs.get("metric", "euclidean"), attrs.get("method"))


def requery_far_rows(Xd: da.Array, index: NeighborIndex, ind: da.Array, dist: da.Array) -> tuple[da.Array, da.Array]:
    """Search again, wider, the rows of an approximate self-graph whose neighbours lie far off.

    The rows :func:`~bigdr.graph.neighbors.far_rows` names, with every row's k-th distance as its
    radius. The test needs all of them, so the first graph is held until they are all known
    (12 bytes a neighbour).
    """
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    k, n = int(ind.shape[1]), int(ind.shape[0])
    # Every task gets the whole k-th distance column (index "z"), joined once into one chunk: left in the
    # row blocks, dask counts blocks x blocks tasks' inputs and warns (PerformanceWarning) when the rows
    # are split finely. A dask.delayed of it would be optimised apart from the graph and run the first
    # search a second time.
    kth = dist[:, -1].rechunk(-1)
    index_key = dask.delayed(index, name=index._key_name, traverse=False)
    rows = da.arange(n, chunks=Xd.chunks[0])
    record = record_dtype(k)
    records = da.blockwise(
        _requery_block, "i", Xd, "ij", ind, "ik", dist, "ik", kth, "z", rows, "i", index_key, None,
        concatenate=True, dtype=record, meta=np.empty((0,), dtype=record),
    )  # fmt: skip
    return split_records(records, k)


def _requery_block(
    block: np.ndarray, ind: np.ndarray, dist: np.ndarray, kth: np.ndarray, rows: np.ndarray, index: NeighborIndex
) -> np.ndarray:
    k = ind.shape[1]
    ind, dist = ind.copy(), dist.copy()  # dask's blocks of the first graph are shared: not in place
    index.improve(block, ind, dist, far_rows(ind, dist, kth, k), rows)
    return as_records(ind, dist)


def knn_graph(
    X: Any,
    n_neighbors: int = 15,
    *,
    metric: str = "euclidean",
    method: str = "auto",
    random_state: int | None = None,
    search_options: dict | None = None,
    partitions: int | str | None = None,
    n_probe: int | None = 3,
    nndescent_kwargs: dict | None = None,
) -> KNNGraph:
    """kNN graph of all rows of ``X``.

    With ``partitions=None``, index-based methods (``kdtree``, ``brute``,
    ``faiss``) build the index on all rows and query every row against it
    blockwise (k + 1 neighbours, then the row itself is dropped);
    ``nndescent`` runs pynndescent on all rows in this process and takes its
    neighbour graph. Either way all rows are held in this process once.

    With ``partitions`` (an int, or ``"auto"``: one cell per 250,000 rows) no
    process holds the rows or the graph whole: the rows are split into cells
    by k-means centroids of a sample, an index is built per cell on the worker
    that searches it, and each row is searched in its own cell and then in the
    other cells that may hold a row nearer than the k-th found there (a cell's
    ball, and in euclidean routing its Voronoi half-space, bound the distance),
    at most ``n_probe`` cells in all, the k best merged blockwise
    (:mod:`bigdr.graph.partitioned`). ``n_probe=None`` searches every cell the
    bounds leave: with an exact method the graph is then the exact kNN graph,
    for any partitioning.

    Parameters
    ----------
    X : array-like, dask array or path of a store
    n_neighbors : int
    metric : str
    method : {"auto", "kdtree", "brute", "faiss", "nndescent"}
        The search (per cell with ``partitions``).
    random_state : int or None
        Seeds NN-descent and the cells' k-means.
    search_options : dict, optional
        Options of the search back end (:class:`NeighborIndex`), e.g.
        ``{"ef_search": 128}`` for faiss.
    partitions : None, int or "auto"
    n_probe : int or None
        Most cells a row is searched in, its own included (with ``partitions``);
        None: every cell the bounds leave.
    nndescent_kwargs : dict, optional
        The old name of ``search_options``, accepted with a FutureWarning until 0.3.

    Returns
    -------
    KNNGraph
    """
    options = resolve_search_options(search_options, nndescent_kwargs, "knn_graph")
    Xd = as_array(X, extra_row_bytes=query_row_bytes(n_neighbors if isinstance(n_neighbors, int) else 0))
    n, p = Xd.shape
    k = check_k(n_neighbors, n - 1, "other rows")
    check_method(method)
    check_metric(metric, method)
    if partitions is not None:
        from .partitioned import partitioned_graph

        ind, dist = partitioned_graph(Xd, k, metric, method, partitions, n_probe, random_state, options)
        return KNNGraph(ind, dist, metric, method if method != "auto" else "partitioned")
    chosen = choose_method(n, p, metric) if method == "auto" else method
    backend = BACKENDS[chosen]
    if not backend.builds_self_graph:  # an index of all rows, every row queried blockwise
        index = NeighborIndex(metric, chosen, random_state=random_state, search_options=options).fit(Xd)
        if not index.exact:  # the search width that finds RECALL_TARGET of a sample's neighbours
            index.calibrate(calibration_sample(Xd, random_state), k + 1)
        Xd = split_for_balance(Xd)
        ind, dist = blockwise_query(Xd, index, k, exclude_self=True)
        if not index.exact:
            ind, dist = requery_far_rows(Xd, index, ind, dist)
        return KNNGraph(ind, dist, metric, chosen, index)
    data = rows_in_memory(Xd)
    found = backend.self_graph(data, k, metric, random_state, options)
    ind_n, dist_n = drop_self(found[0].astype(np.int64), found[1].astype(np.float32), np.arange(n))
    graph = KNNGraph(from_numpy(ind_n, Xd.chunks[0]), from_numpy(dist_n, Xd.chunks[0]), metric, chosen)
    graph.recall = self_graph_recall(data, dist_n, metric, random_state)
    warn_short_recall(chosen, graph.recall, k, f"on {min(n, CALIBRATION_ROWS)} sampled rows")
    return graph
