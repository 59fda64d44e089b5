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

import uuid
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
CDIST_NAMES = {"manhattan": "cityblock", "l1": "cityblock", "l2": "euclidean"}
CDIST_METRICS = {"l1", "l2", "euclidean", "sqeuclidean", "manhattan", "cityblock", "chebyshev", "cosine", "correlation",
                 "minkowski", "canberra", "braycurtis", "hamming", "jaccard"}


def pairwise_distances(A: np.ndarray, B: np.ndarray, metric: Any = "euclidean",
                       metric_params: dict | None = None) -> np.ndarray:
    """Distances between the rows of two in-memory blocks, ``(len(A), len(B))``.

    ``metric`` is a name of ``scipy.spatial.distance.cdist`` (``manhattan``
    and ``l1``/``l2`` accepted) or a callable ``f(A, B) -> (len(A), len(B))``
    array. Euclidean distances in more than 32 dimensions go through a gemm
    (``|a|^2 + |b|^2 - 2 a.b``, clipped at 0), 20-50x faster than ``cdist``.
    """
    A = np.asarray(A)
    B = np.asarray(B)
    if callable(metric):
        D = np.asarray(metric(A, B, **(metric_params or {})), dtype=np.float64)
        if D.shape != (len(A), len(B)):
            raise ValueError(f"The metric function returned shape {D.shape} for blocks of {len(A)} and {len(B)} "
                             f"rows; it must return ({len(A)}, {len(B)}).")
        return D
    if metric in ("euclidean", "l2", "sqeuclidean") and A.shape[1] > 32:
        sq = np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :] - 2.0 * (A @ B.T)
        sq = np.maximum(sq, 0.0, out=sq)
        return sq if metric == "sqeuclidean" else np.sqrt(sq, out=sq)
    from scipy.spatial.distance import cdist

    return cdist(A, B, metric=CDIST_NAMES.get(metric, metric), **(metric_params or {}))


def check_distance_metric(metric: Any) -> None:
    """Raise a clear error for a metric :func:`pairwise_distances` cannot compute."""
    if callable(metric):
        return
    if not isinstance(metric, str) or metric not in CDIST_METRICS:
        raise ValueError(f"metric={metric!r} is not supported; use one of {sorted(CDIST_METRICS)} "
                         f"or a function f(A, B) returning the distance matrix.")


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
        self._key_name = f"bigdr-neighbor-index-{uuid.uuid4().hex}"
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
            ind = np.empty((len(block), k), dtype=np.int64)
            dist = np.empty((len(block), k))
            for s in range(0, len(block), BRUTE_QUERY_ROWS):
                q = block[s : s + BRUTE_QUERY_ROWS]
                ind[s : s + len(q)], dist[s : s + len(q)] = self._brute(q, k)
        else:
            ind, dist = self._nnd.query(block, k=k, epsilon=self.query_epsilon)
        return ind.astype(np.int64, copy=False), dist.astype(np.float32, copy=False)

    def _brute(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact k nearest reference rows of the rows of ``q`` by full distance rows."""
        from scipy.spatial.distance import cdist

        ref = self._reference
        if self.metric in ("euclidean", "sqeuclidean", "cosine"):
            # Rank by a gemm (|q|^2 + |r|^2 - 2 q r^T: BLAS speed, 20-50x cdist
            # in 50-D), then recompute the chosen distances exactly so the
            # cancellation of that formula never reaches the result.
            if self.metric == "cosine":
                score = -(_unit_rows(q) @ _unit_rows(ref).T)
            else:
                if not hasattr(self, "_ref_sq"):
                    self._ref_sq = np.einsum("ij,ij->i", ref, ref)
                score = self._ref_sq[None, :] - 2.0 * (q @ ref.T)
        else:
            score = cdist(q, ref, metric=CDIST_NAMES.get(self.metric, self.metric))
        if k < score.shape[1]:
            cand = np.argpartition(score, k - 1, axis=1)[:, :k]
        else:
            cand = np.tile(np.arange(score.shape[1]), (len(q), 1))
        if self.metric == "cosine":
            exact = 1.0 - np.einsum("bp,bkp->bk", _unit_rows(q), _unit_rows(ref)[cand])
        elif self.metric in ("euclidean", "sqeuclidean"):
            diff = q[:, None, :] - ref[cand]
            exact = np.einsum("bkp,bkp->bk", diff, diff)
            exact = np.sqrt(exact) if self.metric == "euclidean" else exact
        else:
            name = CDIST_NAMES.get(self.metric, self.metric)
            exact = np.stack([cdist(q[i : i + 1], ref[c], metric=name)[0] for i, c in enumerate(cand)])
        order = np.argsort(exact, axis=1, kind="stable")
        return np.take_along_axis(cand, order, axis=1), np.take_along_axis(exact, order, axis=1)

    def query(self, X: Any, n_neighbors: int) -> tuple[da.Array, da.Array]:
        """k nearest reference rows of every row of ``X``, as lazy (indices, distances)."""
        if not hasattr(self, "method_"):
            raise ValueError("This NeighborIndex is not fitted; call fit(reference) first.")
        k = _check_k(n_neighbors, self.n_reference_, "reference rows")
        Xd = as_array(X, min_rows=1, extra_row_bytes=_query_row_bytes(k))
        if Xd.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xd.shape[1]} columns; the index was built on {self.n_features_in_}.")
        return _blockwise_query(Xd, self, k, exclude_self=False)


def _query_row_bytes(k: int) -> int:
    # Search results in float64/int64 (k + 1 columns), the structured record
    # and the two output arrays, counted per row for the chunk policy.
    return max(int(k), 0) * 48 + 16


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
    # One graph key for the index: shipped to each worker once. The name is
    # fixed at fit time; letting dask tokenize the index would pickle the
    # whole tree just to name the key (seconds for a large index).
    index_key = dask.delayed(index, name=index._key_name, traverse=False)
    records = da.map_blocks(
        _query_records, Xd, index_key, k, exclude_self,
        drop_axis=1, dtype=np.dtype([("i", np.int64, (k,)), ("d", np.float32, (k,))]),
        meta=np.empty((0,), dtype=[("i", np.int64, (k,)), ("d", np.float32, (k,))]),
    )
    ind = records.map_blocks(_field, "i", new_axis=1, chunks=(Xd.chunks[0], (k,)), dtype=np.int64,
                             meta=np.empty((0, 0), np.int64))
    dist = records.map_blocks(_field, "d", new_axis=1, chunks=(Xd.chunks[0], (k,)), dtype=np.float32,
                              meta=np.empty((0, 0), np.float32))
    return ind, dist


def _field(records: np.ndarray, name: str) -> np.ndarray:
    return records[name]


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
    Xd = as_array(X, extra_row_bytes=_query_row_bytes(n_neighbors if isinstance(n_neighbors, int) else 0))
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


def warm_up(metric: str = "euclidean") -> float:
    """Compile pynndescent's numba code in this process now; returns the seconds taken.

    Run it once per worker before timing-sensitive work:
    ``client.run(bigdr.neighbors.warm_up)``. numba caches compiled code on
    disk (in pynndescent's ``__pycache__``, or ``NUMBA_CACHE_DIR`` when that
    is set or the package directory is read-only), so later processes on the
    same machine load it instead of compiling.
    """
    import time

    from pynndescent import NNDescent

    t0 = time.perf_counter()
    data = np.random.default_rng(0).standard_normal((500, 8)).astype(np.float32)
    index = NNDescent(data, n_neighbors=10, metric=metric, random_state=0)
    index.query(data[:10], k=5)
    return time.perf_counter() - t0
