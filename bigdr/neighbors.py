"""Nearest neighbours: an index on reference rows, blockwise queries, all-rows kNN graphs.

A kNN graph is two n x k arrays chunked like the rows: ``indices`` (int64) and
``distances`` (float32). Sparse matrices are built from them only inside the
solver that needs them (:mod:`bigdr.graphs`).

Search methods
--------------
``"kdtree"``
    Exact, ``scipy.spatial.cKDTree`` (Minkowski metrics; cosine through unit
    vectors). Fast in low dimension.
``"nndescent"``
    Approximate, pynndescent (Dong et al. 2011 NN-descent with random
    projection tree initialisation); any metric pynndescent offers. Its numba
    code compiles on first use in every process (see ``docs/neighbors.md``).
``"brute"``
    Exact, blockwise distance matrices against the reference rows; any metric
    of ``scipy.spatial.distance.cdist``. For small reference sets.
``"auto"``
    ``kdtree`` when the metric allows it and the dimension is at most
    ``KDTREE_MAX_DIM``; ``brute`` for small reference sets in high dimension;
    else ``nndescent``. Thresholds from ``benchmarks/results/neighbors.md``.
"""

from __future__ import annotations

from typing import Any

import dask
import dask.array as da
import numpy as np

from ._compute import compute
from .io import _from_numpy, as_array

#: cKDTree beats NN-descent up to about this many dimensions (measured).
KDTREE_MAX_DIM = 15
#: Below this many reference rows, brute force is cheap in any dimension.
BRUTE_MAX_REFERENCE = 20_000
#: Rows per piece of a brute-force query (bounds the distance matrix in memory).
BRUTE_QUERY_ROWS = 2048

KDTREE_METRICS = {"euclidean": 2, "l2": 2, "manhattan": 1, "cityblock": 1, "l1": 1, "chebyshev": np.inf,
                  "cosine": 2}
CDIST_METRICS = {"euclidean", "sqeuclidean", "manhattan", "cityblock", "chebyshev", "cosine", "correlation",
                 "minkowski", "canberra", "braycurtis", "hamming", "jaccard"}


def _nndescent_metrics() -> set[str]:
    try:
        from pynndescent.distances import named_distances
    except ImportError:  # pragma: no cover - pynndescent is a dependency
        return set()
    return set(named_distances)


def _check_metric(metric: str, method: str) -> None:
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string; got {type(metric).__name__}.")
    known = set(KDTREE_METRICS) | CDIST_METRICS | _nndescent_metrics()
    if metric not in known:
        raise ValueError(f"Unknown metric {metric!r}; choose one of {sorted(known)}.")
    if method == "kdtree" and metric not in KDTREE_METRICS:
        raise ValueError(f"method='kdtree' supports {sorted(KDTREE_METRICS)}; use method='nndescent' for {metric!r}.")
    if method == "brute" and metric not in CDIST_METRICS:
        raise ValueError(f"method='brute' supports {sorted(CDIST_METRICS)}; use method='nndescent' for {metric!r}.")


def choose_method(n_reference: int, dim: int, metric: str) -> str:
    """The search method ``"auto"`` picks (see the module docstring)."""
    if metric in KDTREE_METRICS and dim <= KDTREE_MAX_DIM:
        return "kdtree"
    if n_reference <= BRUTE_MAX_REFERENCE and metric in CDIST_METRICS:
        return "brute"
    return "nndescent"


def _unit_rows(a: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.where(norms > 0, norms, 1)


class NeighborIndex:
    """An index on reference rows, queried blockwise.

    Parameters
    ----------
    metric : str
        ``euclidean``, ``cosine``, ``manhattan``, ``chebyshev``, or any metric
        of pynndescent (method ``nndescent``) or ``scipy.spatial.distance.cdist``
        (method ``brute``).
    method : {"auto", "kdtree", "nndescent", "brute"}
    random_state : int or None
        Seed of NN-descent.
    nndescent_kwargs : dict, optional
        Passed to ``pynndescent.NNDescent``.

    Notes
    -----
    The reference rows are held in memory (they are landmarks or a training
    set). :meth:`query` returns lazy dask arrays; the index enters the graph as
    one key, so a cluster ships it to each worker once, not once per chunk.
    """

    def __init__(self, metric: str = "euclidean", method: str = "auto", random_state: int | None = None,
                 nndescent_kwargs: dict | None = None, query_epsilon: float = 0.1) -> None:
        self.metric = metric
        self.method = method
        self.random_state = random_state
        self.nndescent_kwargs = nndescent_kwargs
        self.query_epsilon = query_epsilon

    def fit(self, reference: Any) -> "NeighborIndex":
        if self.method not in ("auto", "kdtree", "nndescent", "brute"):
            raise ValueError(f"method must be 'auto', 'kdtree', 'nndescent' or 'brute'; got {self.method!r}.")
        _check_metric(self.metric, self.method)
        ref = as_array(reference, name="reference", min_rows=1)
        (ref,) = compute(ref)
        ref = np.ascontiguousarray(ref)
        n, dim = ref.shape
        method = choose_method(n, dim, self.metric) if self.method == "auto" else self.method
        self.method_ = method
        self.n_reference_, self.n_features_in_ = n, dim
        if method == "kdtree":
            from scipy.spatial import cKDTree

            data = _unit_rows(ref) if self.metric == "cosine" else ref
            self._tree = cKDTree(data, balanced_tree=False, compact_nodes=False)
        elif method == "brute":
            self._reference = ref
        else:
            from pynndescent import NNDescent

            kw = dict(self.nndescent_kwargs or {})
            kw.setdefault("n_neighbors", 30)
            self._nnd = NNDescent(ref, metric=self.metric, random_state=self.random_state, **kw)
            self._nnd.prepare()
        return self

    # -- querying one numpy block (runs on workers) --------------------------
    def query_block(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact/approximate k nearest reference rows of each row of ``block``."""
        block = np.asarray(block)
        if self.method_ == "kdtree":
            q = _unit_rows(block) if self.metric == "cosine" else block
            dist, ind = self._tree.query(q, k=k, p=KDTREE_METRICS[self.metric])
            dist, ind = dist.reshape(len(block), k), ind.reshape(len(block), k)
            if self.metric == "cosine":  # chord length -> cosine distance
                dist = dist**2 / 2
        elif self.method_ == "brute":
            from scipy.spatial.distance import cdist

            ind = np.empty((len(block), k), dtype=np.int64)
            dist = np.empty((len(block), k))
            for s in range(0, len(block), BRUTE_QUERY_ROWS):
                D = cdist(block[s : s + BRUTE_QUERY_ROWS], self._reference, metric=self.metric)
                part = np.argpartition(D, k - 1, axis=1)[:, :k] if k < D.shape[1] else np.tile(np.arange(D.shape[1]), (len(D), 1))
                pd = np.take_along_axis(D, part, axis=1)
                order = np.argsort(pd, axis=1, kind="stable")
                ind[s : s + len(D)] = np.take_along_axis(part, order, axis=1)
                dist[s : s + len(D)] = np.take_along_axis(pd, order, axis=1)
        else:
            ind, dist = self._nnd.query(block, k=k, epsilon=self.query_epsilon)
        return ind.astype(np.int64, copy=False), dist.astype(np.float32, copy=False)

    def query(self, X: Any, n_neighbors: int) -> tuple[da.Array, da.Array]:
        """k nearest reference rows of every row of ``X``, as lazy (indices, distances)."""
        if not hasattr(self, "method_"):
            raise ValueError("This NeighborIndex is not fitted; call fit(reference) first.")
        k = _check_k(n_neighbors, self.n_reference_, "reference rows")
        Xd = as_array(X, min_rows=1)
        if Xd.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xd.shape[1]} columns; the index was built on {self.n_features_in_}.")
        return _blockwise_query(Xd, self, k, exclude_self=False)


def _check_k(k: Any, n_available: int, what: str) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"n_neighbors must be an int; got {type(k).__name__}.")
    if k < 1:
        raise ValueError(f"n_neighbors={k} must be at least 1.")
    if k > n_available:
        raise ValueError(f"n_neighbors={k} is more than the {n_available} {what}; use at most {n_available}.")
    return int(k)


def _query_records(block: np.ndarray, index: NeighborIndex, k: int, exclude_self: bool, block_info=None) -> np.ndarray:
    start = block_info[0]["array-location"][0][0] if block_info else 0
    kq = k + 1 if exclude_self else k
    ind, dist = index.query_block(block, kq)
    if exclude_self:
        ind, dist = _drop_self(ind, dist, np.arange(start, start + len(block)))
    out = np.empty(len(block), dtype=[("i", np.int64, (k,)), ("d", np.float32, (k,))])
    out["i"], out["d"] = ind, dist
    return out


def _drop_self(ind: np.ndarray, dist: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Remove one column per row: the row itself, or, where duplicates at
    distance 0 displaced it from the k + 1 found, the farthest neighbour."""
    n, k1 = ind.shape
    is_self = ind == rows[:, None]
    drop_at = np.where(is_self.any(axis=1), is_self.argmax(axis=1), k1 - 1)
    keep = np.ones_like(is_self)
    keep[np.arange(n), drop_at] = False
    return ind[keep].reshape(n, k1 - 1), dist[keep].reshape(n, k1 - 1)


def _blockwise_query(Xd: da.Array, index: NeighborIndex, k: int, exclude_self: bool) -> tuple[da.Array, da.Array]:
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    # One graph key for the index: shipped to each worker once.
    index_key = dask.delayed(index, pure=True, traverse=False)
    records = da.map_blocks(
        _query_records, Xd, index_key, k, exclude_self,
        drop_axis=1, dtype=np.dtype([("i", np.int64, (k,)), ("d", np.float32, (k,))]),
        meta=np.empty((0,), dtype=[("i", np.int64, (k,)), ("d", np.float32, (k,))]),
    )
    ind = records.map_blocks(lambda r: r["i"], new_axis=1, chunks=(Xd.chunks[0], (k,)), dtype=np.int64,
                             meta=np.empty((0, 0), np.int64))
    dist = records.map_blocks(lambda r: r["d"], new_axis=1, chunks=(Xd.chunks[0], (k,)), dtype=np.float32,
                              meta=np.empty((0, 0), np.float32))
    return ind, dist


class KNNGraph:
    """The k nearest neighbours of every row: two n x k dask arrays chunked like the rows.

    ``indices[i, j]`` is the j-th nearest other row of row i (ascending
    distance), ``distances[i, j]`` its distance (float32). A row is never its
    own neighbour; exact duplicates are neighbours at distance 0.
    """

    def __init__(self, indices: da.Array, distances: da.Array, metric: str = "euclidean",
                 method: str | None = None) -> None:
        if indices.shape != distances.shape or indices.ndim != 2:
            raise ValueError(f"indices {indices.shape} and distances {distances.shape} must be equal n x k shapes.")
        self.indices, self.distances, self.metric, self.method = indices, distances, metric, method

    @property
    def n_samples(self) -> int:
        return int(self.indices.shape[0])

    @property
    def n_neighbors(self) -> int:
        return int(self.indices.shape[1])

    def __repr__(self) -> str:
        return f"KNNGraph(n_samples={self.n_samples}, n_neighbors={self.n_neighbors}, metric={self.metric!r}, method={self.method!r})"

    def compute(self) -> tuple[np.ndarray, np.ndarray]:
        """Both arrays in memory (n x k each)."""
        ind, dist = compute(self.indices, self.distances)
        return ind, dist

    def persist(self) -> "KNNGraph":
        """Compute once and keep in memory (or on the cluster's workers)."""
        ind, dist = dask.persist(self.indices, self.distances)
        return KNNGraph(ind, dist, self.metric, self.method)

    def to_zarr(self, path: str, overwrite: bool = False) -> str:
        """Write both arrays to a zarr group atomically."""
        from .io import write_zarr

        attrs = {"kind": "bigdr-knn-graph", "metric": self.metric, "method": self.method,
                 "n_neighbors": self.n_neighbors}
        return str(write_zarr({"indices": self.indices, "distances": self.distances}, path, attrs=attrs,
                              overwrite=overwrite))

    @classmethod
    def from_zarr(cls, path: str) -> "KNNGraph":
        """Open a graph written by :meth:`to_zarr` (lazily)."""
        import zarr

        from .io import open_zarr

        group = zarr.open_group(str(path), mode="r")
        attrs = dict(group.attrs)
        if attrs.get("kind") != "bigdr-knn-graph":
            raise ValueError(f"{path!r} is not a kNN graph written by bigdr (no 'bigdr-knn-graph' marker).")
        ind = da.from_zarr(open_zarr(str(path), dataset="indices"))
        dist = da.from_zarr(open_zarr(str(path), dataset="distances"))
        return cls(ind, dist, attrs.get("metric", "euclidean"), attrs.get("method"))


def knn_graph(X: Any, n_neighbors: int = 15, *, metric: str = "euclidean", method: str = "auto",
              random_state: int | None = None, nndescent_kwargs: dict | None = None) -> KNNGraph:
    """kNN graph of all rows of ``X``.

    Exact methods (``kdtree``, ``brute``) build the index on all rows and
    query every row against it blockwise (k + 1 neighbours, then the row
    itself is dropped). ``nndescent`` runs pynndescent on all rows in this
    process and takes its neighbour graph. Either way all rows are held in
    memory once: this is the "fits in one process" regime; larger data goes
    through landmarks (:func:`bigdr.landmarks.select_landmarks` and
    :class:`NeighborIndex`).

    Returns
    -------
    KNNGraph
    """
    Xd = as_array(X)
    n, p = Xd.shape
    k = _check_k(n_neighbors, n - 1, "other rows")
    if method not in ("auto", "kdtree", "nndescent", "brute"):
        raise ValueError(f"method must be 'auto', 'kdtree', 'nndescent' or 'brute'; got {method!r}.")
    _check_metric(metric, method)
    chosen = choose_method(n, p, metric) if method == "auto" else method
    if chosen != "nndescent":
        index = NeighborIndex(metric, chosen).fit(Xd)
        ind, dist = _blockwise_query(Xd, index, k, exclude_self=True)
        return KNNGraph(ind, dist, metric, chosen)
    from pynndescent import NNDescent

    (data,) = compute(Xd)
    kw = dict(nndescent_kwargs or {})
    nnd = NNDescent(np.ascontiguousarray(data), n_neighbors=k + 1, metric=metric, random_state=random_state, **kw)
    ind, dist = nnd.neighbor_graph
    ind, dist = _drop_self(ind.astype(np.int64), dist.astype(np.float32), np.arange(n))
    return KNNGraph(_from_numpy(ind, Xd.chunks[0]), _from_numpy(dist, Xd.chunks[0]), metric, chosen)
