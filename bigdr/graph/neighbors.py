"""Nearest neighbours: one index interface (:class:`NeighborIndex`), the choice of a search, blockwise queries.

The search back ends are :mod:`bigdr.graph.backends` (one class each). ``"auto"`` picks
``kdtree`` when the metric allows it and the dimension is at most
``KDTREE_MAX_DIM``; ``brute`` for small reference sets in high dimension;
else ``faiss`` for its metrics (when installed) and ``nndescent`` for the
rest. Thresholds and the reasons in ``benchmarks/results/neighbors.md``.
An approximate search checks its own answers and searches the rows that look
wrong again, wider (:func:`far_rows`, :meth:`NeighborIndex.improve`).
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np

from .._validation import check_n_features
from ..core.distances import CDIST_METRICS, KDTREE_METRICS
from ..io import as_array, rows_in_memory
from ..runtime.compute import compute, parallelism
from .backends import (
    BACKENDS,
    CALIBRATION_ROWS,
    FAISS_METRICS,
    KDTREE_MAX_DIM,
    RECALL_TARGET,
    SEARCH_METHODS,
    exact_kth,
    faiss_available,
    nndescent_metrics,
    recall_within,
)

#: Below this many reference rows, brute force is cheap in any dimension.
BRUTE_MAX_REFERENCE = 20_000
#: Reference rows above which an index queried by rows to be placed (``queried=True``) prefers
#: faiss's HNSW to brute force: on 20,000 x 50 rows (a 5-D manifold, k = 35, one core) 18.6 against
#: 147 us a query row at recall 1.0, the two equal at about 2,000 rows (a one-off measurement).
QUERY_BRUTE_MAX = 4096
#: A row of an approximate query whose m-th neighbour lies this many times farther than the median
#: m-th-neighbour distance of its neighbours is searched again (:func:`far_rows`). A row that searched
#: the wrong part of the index finds another layer of the manifold, a few times its true k-th distance
#: away (faiss's HNSW on 300,000 rows of a 4-D manifold in 40-D: 11 such rows of its self-graph, up to
#: 3.3x; this test flagged 20 rows, all 11 among them; one-off). Such edges short-circuit geodesics.
FAR_ROW_RATIO = 1.5


def check_metric(metric: Any, method: str = "auto") -> None:
    """Raise a clear error for a metric the chosen search method cannot use.

    Names bigdr knows itself are checked without importing pynndescent (whose
    import costs seconds of numba set-up); only other names are looked up in
    pynndescent's list.
    """
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string; got {type(metric).__name__}.")
    if method == "kdtree" and metric not in KDTREE_METRICS:
        raise ValueError(f"method='kdtree' supports {sorted(KDTREE_METRICS)}; use method='nndescent' for {metric!r}.")
    if method == "faiss" and metric not in FAISS_METRICS:
        raise ValueError(f"method='faiss' supports {sorted(FAISS_METRICS)}; use method='nndescent' for {metric!r}.")
    if method == "brute" and metric not in CDIST_METRICS:
        raise ValueError(f"method='brute' supports {sorted(CDIST_METRICS)}; use method='nndescent' for {metric!r}.")
    if metric in KDTREE_METRICS or metric in CDIST_METRICS:
        return
    known = set(KDTREE_METRICS) | CDIST_METRICS | nndescent_metrics()
    if metric not in known:
        raise ValueError(f"Unknown metric {metric!r}; choose one of {sorted(known)}.")


def choose_method(n_reference: int, dim: int, metric: str, queried: bool = False) -> str:
    """The search method ``"auto"`` picks (see the module docstring).

    ``queried``: an index that rows to be placed query one by one (an
    extension), where brute force pays ``n_reference x dim`` per row again
    and again: above :data:`QUERY_BRUTE_MAX` reference rows it gives way to
    faiss's HNSW where available.
    """
    if metric in KDTREE_METRICS and dim <= KDTREE_MAX_DIM:
        return "kdtree"
    if n_reference <= BRUTE_MAX_REFERENCE and metric in CDIST_METRICS:
        if queried and n_reference > QUERY_BRUTE_MAX and metric in FAISS_METRICS and faiss_available():
            return "faiss"
        return "brute"
    # faiss needs no compilation: NN-descent's numba wait (30-100 s per
    # process) is most of a first fit at the sizes one process holds.
    if metric in FAISS_METRICS and faiss_available():
        return "faiss"
    return "nndescent"


def check_method(method: Any) -> str:
    if method not in SEARCH_METHODS:
        raise ValueError(f"method must be one of {', '.join(repr(m) for m in SEARCH_METHODS)}; got {method!r}.")
    return str(method)


#: scikit-learn's ``neighbors_algorithm`` -> bigdr's search ("auto": bigdr's ``neighbor_method`` decides).
#: A ball tree and a k-d tree find the same exact neighbours; bigdr's exact tree is the k-d tree.
SKLEARN_ALGORITHMS = {"auto": None, "brute": "brute", "kd_tree": "kdtree", "ball_tree": "kdtree"}
#: ``metric="minkowski"`` with these ``p`` is one of bigdr's metrics.
MINKOWSKI = {1.0: "manhattan", 2.0: "euclidean", float("inf"): "chebyshev"}


def neighbor_search(neighbor_method: Any, neighbors_algorithm: Any = "auto") -> str:
    """The search from bigdr's ``neighbor_method`` and scikit-learn's ``neighbors_algorithm``.

    scikit-learn's name decides unless it is ``"auto"``; both given and different is an error.
    """
    if neighbors_algorithm not in SKLEARN_ALGORITHMS:
        raise ValueError(
            f"neighbors_algorithm must be one of {', '.join(map(repr, SKLEARN_ALGORITHMS))}; "
            f"got {neighbors_algorithm!r}."
        )
    chosen = SKLEARN_ALGORITHMS[neighbors_algorithm]
    if chosen is None:
        return check_method(neighbor_method)
    if neighbor_method not in ("auto", chosen):
        raise ValueError(
            f"neighbors_algorithm={neighbors_algorithm!r} (scikit-learn's name) asks for {chosen!r} but "
            f"neighbor_method={neighbor_method!r}; give one of them."
        )
    return chosen


def minkowski_metric(metric: Any, p: Any = 2, metric_params: Any = None) -> Any:
    """bigdr's metric for scikit-learn's ``metric``, ``p`` and ``metric_params``.

    ``"minkowski"`` with ``p`` 1, 2 or infinity is ``manhattan``, ``euclidean``
    or ``chebyshev``; ``metric_params`` may only give that ``p``. Other metrics
    ignore ``p``, as scikit-learn's do.
    """
    params = dict(metric_params or {})
    if set(params) - {"p"}:
        raise ValueError(f"metric_params may only hold 'p' (for metric='minkowski'); got {sorted(params)}.")
    p = params.get("p", p)
    if metric != "minkowski":
        return metric
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or float(p) not in MINKOWSKI:
        raise ValueError(
            f"metric='minkowski' takes p = 1, 2 or inf here (manhattan, euclidean, chebyshev); got p={p!r}. "
            f"Give another metric by name."
        )
    return MINKOWSKI[float(p)]


class SklearnSearch:
    """A graph method's search from bigdr's names and scikit-learn's (``neighbors_algorithm``, ``p``,
    ``metric_params``); a model saved before these existed reads as their defaults."""

    neighbor_method: str
    metric: str

    def _search(self) -> str:
        return neighbor_search(self.neighbor_method, getattr(self, "neighbors_algorithm", "auto"))

    def _metric(self) -> str:
        return minkowski_metric(self.metric, getattr(self, "p", 2), getattr(self, "metric_params", None))


def resolve_search_options(options: dict | None, nndescent_kwargs: dict | None, owner: str) -> dict:
    """The search back end's options: ``options``, or those given under the old name ``nndescent_kwargs``.

    The old name said NN-descent, but every back end reads these options (faiss's ``ef_search`` among
    them); it is accepted with a FutureWarning until 0.3.
    """
    if nndescent_kwargs is None:
        return dict(options or {})
    if options is not None:
        raise TypeError(f"{owner}: give search_options, not also nndescent_kwargs (its old name).")
    warnings.warn(
        f"{owner}(nndescent_kwargs=...) is search_options since bigdr 0.2 (every search back end reads "
        f"them); nndescent_kwargs goes in 0.3.",
        FutureWarning,
        stacklevel=3,
    )
    return dict(nndescent_kwargs)


class NeighborIndex:
    """An index on reference rows, queried blockwise.

    Parameters
    ----------
    metric : str
        ``euclidean``, ``cosine``, ``manhattan``, ``chebyshev``, or any metric
        of pynndescent (method ``nndescent``) or ``scipy.spatial.distance.cdist``
        (method ``brute``).
    method : {"auto", "kdtree", "nndescent", "faiss", "brute"}
    random_state : int or None
        Seed of NN-descent.
    search_options : dict, optional
        Options of the search back end: ``pynndescent.NNDescent``'s keywords
        for ``nndescent``; ``hnsw_m``, ``ef_construction`` and ``ef_search``
        for ``faiss`` (a wider ``ef_search`` raises recall at the cost of query
        time).
    query_epsilon : float or None
        Search breadth of NN-descent queries (pynndescent's ``epsilon``);
        None: 0.1, which :meth:`calibrate` may widen. A number given here
        (or in ``search_options``) is kept.
    queried : bool
        The index serves rows to be placed (a transform), not a graph of
        its own rows: ``auto`` then prefers faiss to brute force above
        :data:`QUERY_BRUTE_MAX` reference rows (:func:`choose_method`).
    nndescent_kwargs : dict, optional
        The old name of ``search_options``, accepted with a FutureWarning until 0.3.

    Notes
    -----
    The reference rows are held in memory (they are landmarks or a training
    set). :meth:`query` returns lazy dask arrays; the index enters the graph as
    one key, so a cluster ships it to each worker once, not once per chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from bigdr import NeighborIndex
    >>> ref = np.arange(10.0).reshape(5, 2)
    >>> index = NeighborIndex().fit(ref)
    >>> ind, dist = index.query_block(np.array([[0.1, 1.1]]), 2)
    >>> ind.tolist(), index.method_
    ([[0, 1]], 'kdtree')
    """

    def __init__(
        self,
        metric: str = "euclidean",
        method: str = "auto",
        random_state: int | None = None,
        search_options: dict | None = None,
        query_epsilon: float | None = None,
        queried: bool = False,
        nndescent_kwargs: dict | None = None,
    ) -> None:
        self.metric = metric
        self.method = method
        self.random_state = random_state
        self.search_options = search_options
        self.query_epsilon = query_epsilon
        self.queried = queried
        self.nndescent_kwargs = nndescent_kwargs

    def fit(self, reference: Any) -> NeighborIndex:
        """Build the index on ``reference`` (held in memory)."""
        check_method(self.method)
        check_metric(self.metric, self.method)
        checked = as_array(reference, name="reference", min_rows=1)
        # Rows already in this process are checked here: on a cluster they would travel to a worker and back
        ref = rows_in_memory(checked, **({"scheduler": "threads"} if isinstance(reference, np.ndarray) else {}))
        n, dim = ref.shape
        self._key_name = f"bigdr-neighbor-index-{uuid.uuid4().hex}"
        method = choose_method(n, dim, self.metric, self.queried) if self.method == "auto" else self.method
        given = resolve_search_options(self.search_options, self.nndescent_kwargs, "NeighborIndex")
        options = {**given} if self.query_epsilon is None else {**given, "query_epsilon": self.query_epsilon}
        self._backend = BACKENDS[method](self.metric, self.random_state, options)
        self._backend.build(ref)
        self.method_ = method
        self.n_reference_, self.n_features_in_ = n, dim
        return self

    def query_block(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact/approximate k nearest reference rows of each row of ``block`` (numpy; runs on workers).

        An approximate index given its reference rows' neighbour radii (:meth:`set_radii`) searches
        again, wider, the rows whose neighbours it finds far beyond those radii (:func:`far_rows`).
        """
        block = np.asarray(block)
        ind, dist = self._backend.query(block, k)
        ind, dist = ind.astype(np.int64, copy=False), dist.astype(np.float32, copy=False)
        radii = getattr(self, "radii_", None)
        if radii is not None and not self.exact:
            self.improve(block, ind, dist, far_rows(ind, dist, radii, self.radii_k_))
        return ind, dist

    def improve(
        self, block: np.ndarray, ind: np.ndarray, dist: np.ndarray, which: np.ndarray, rows: np.ndarray | None = None
    ) -> None:
        """Search rows ``which`` of ``block`` again, :data:`REQUERY_WIDTH` times as wide, in place.

        ``ind``, ``dist``: the first answer (k columns); a row keeps it unless the wider search finds a
        nearer k-th neighbour. ``rows``: the block's own row numbers in the index, for a self-graph
        (each row's own entry is then dropped).
        """
        if not len(which):
            return
        k = ind.shape[1]
        i2, d2 = self.requery_block(block[which], k + (rows is not None))
        if rows is not None:
            i2, d2 = drop_self(i2, d2, rows[which])
        better = d2[:, -1] < dist[which, -1]
        ind[which[better]], dist[which[better]] = i2[better], d2[better]

    def set_radii(self, radii: np.ndarray | None, k: int) -> NeighborIndex:
        """The reference rows' ``k``-th-neighbour distances in their own graph (``None``: unknown)."""
        self.radii_ = None if radii is None else np.asarray(radii, dtype=np.float32)
        self.radii_k_ = int(k)
        return self

    def calibrate(self, sample: np.ndarray, k: int, target: float = RECALL_TARGET) -> float:
        """Widen an approximate search until it finds ``target`` of the ``k`` nearest reference rows of
        each row of ``sample`` (reference rows themselves); the recall reached, also kept as ``recall_``.

        An all-rows graph (:func:`~bigdr.graph.knn_graph`) calibrates its index on
        :data:`~bigdr.graph.backends.CALIBRATION_ROWS` of its rows; the search width the back end
        chose then serves every query. A search width given in ``search_options`` is kept and only
        measured. Warns when the widest search falls short of ``target``.
        """
        given = self._backend.width_option in self._backend.options
        recall = self.recall_ = self._backend.calibrate(np.asarray(sample), int(k), float(target))
        if not given:
            warn_short_recall(self.method_, recall, int(k), f"on {len(sample)} sampled rows", target)
        return recall

    @property
    def exact(self) -> bool:
        """Whether queries find the true nearest rows (``kdtree``, ``brute``)."""
        return bool(self._backend.exact)

    def requery_block(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`query_block` searching :data:`REQUERY_WIDTH` times as wide (approximate indexes)."""
        ind, dist = self._backend.requery(np.asarray(block), k)
        return ind.astype(np.int64, copy=False), dist.astype(np.float32, copy=False)

    def radius_pairs(self, block: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """(row of ``block``, reference row) pairs within euclidean ``radius`` (numpy; k-d tree indexes only)."""
        radius_pairs = getattr(self._backend, "radius_pairs", None)
        if radius_pairs is None:
            raise ValueError(f"Radius queries need method='kdtree'; this index uses {self.method_!r}.")
        return radius_pairs(np.asarray(block), float(radius))

    def query(self, X: Any, n_neighbors: int) -> tuple[da.Array, da.Array]:
        """k nearest reference rows of every row of ``X``, as lazy (indices, distances)."""
        if not hasattr(self, "method_"):
            raise ValueError("This NeighborIndex is not fitted; call fit(reference) first.")
        k = check_k(n_neighbors, self.n_reference_, "reference rows")
        Xd = as_array(X, min_rows=1, extra_row_bytes=query_row_bytes(k))
        check_n_features(Xd.shape[1], self.n_features_in_, "this NeighborIndex")
        return blockwise_query(Xd, self, k, exclude_self=False)


#: What raises an approximate search's recall once its search width is at its widest: a denser index.
_DENSER = {
    "faiss": "search_options={'hnsw_m': 32, 'ef_construction': 128} (a denser index)",
    "nndescent": "search_options={'n_neighbors': 60} (a denser graph), or method='faiss'",
}


def warn_short_recall(method: str, recall: float, k: int, where: str, target: float = RECALL_TARGET) -> None:
    """Warn when a calibrated search still finds less than ``target`` of the ``k`` nearest (``where``: of what),
    naming what raises it: a denser index of the same method, or the exact search."""
    if recall < target:
        denser = f"{_DENSER[method]}, or " if method in _DENSER else ""
        warnings.warn(
            f"The {method} neighbour search finds an estimated {recall:.4f} of each row's {k} nearest "
            f"({where}) at its widest setting, below {target}; {denser}method='brute' "
            f"(neighbor_method='brute' on an estimator) finds them exactly, at n x n distances.",
            UserWarning,
            stacklevel=4,
        )


def calibration_rows(n: int, random_state: int | None) -> np.ndarray:
    """Sorted positions of :data:`~bigdr.graph.backends.CALIBRATION_ROWS` of ``n`` rows (all when fewer)."""
    return np.sort(np.random.default_rng(random_state).choice(n, min(n, CALIBRATION_ROWS), replace=False))


def self_graph_recall(data: np.ndarray, dist: np.ndarray, metric: str, random_state: int | None) -> float:
    """Mean recall of a graph of ``data`` found by an approximate search (``dist``: each row's distances
    to its k nearest other rows, ascending), on :func:`calibration_rows` of its rows: :func:`recall_within`
    their k-th nearest other row, found exactly (:func:`exact_kth`)."""
    rows = calibration_rows(len(data), random_state)
    kth = exact_kth(data, data[rows], dist.shape[1] + 1, metric)  # the row itself (or a duplicate) comes first
    return recall_within(dist[rows], kth)


def calibration_sample(Xd: da.Array, random_state: int | None) -> np.ndarray:
    """:func:`calibration_rows` of ``Xd``, drawn by ``random_state``."""
    (sample,) = compute(Xd[calibration_rows(int(Xd.shape[0]), random_state)])
    return np.asarray(sample)


def query_row_bytes(k: int) -> int:
    """Bytes a query holds per row besides the row (for the chunk policy of :func:`bigdr.io.as_array`)."""
    # Search results in float64/int64 (k + 1 columns), the structured record
    # and the two output arrays.
    return max(int(k), 0) * 48 + 16


def check_k(k: Any, n_available: int, what: str) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"n_neighbors must be an int; got {type(k).__name__}.")
    if k < 1:
        raise ValueError(f"n_neighbors={k} must be at least 1.")
    if k > n_available:
        raise ValueError(f"n_neighbors={k} is more than the {n_available} {what}; use at most {n_available}.")
    return int(k)


def _query_records(
    block: np.ndarray, index: NeighborIndex, k: int, exclude_self: bool, block_info: Any = None
) -> np.ndarray:
    start = block_info[0]["array-location"][0][0] if block_info else 0
    kq = k + 1 if exclude_self else k
    ind, dist = index.query_block(block, kq)
    if exclude_self:
        rows = np.arange(start, start + len(block))
        # A row of an approximate index that its own search did not reach (neither it nor a
        # duplicate at distance 0) was searched in the wrong place: ask again, wider.
        lost = np.flatnonzero(~((ind == rows[:, None]).any(axis=1) | (dist[:, 0] <= 0)))
        ind, dist = drop_self(ind, dist, rows)
        if not index.exact:
            index.improve(block, ind, dist, lost, rows)
    return as_records(ind, dist)


def record_dtype(k: int) -> np.dtype:
    """The structured row of a neighbour query's result: k indices and k distances."""
    return np.dtype([("i", np.int64, (k,)), ("d", np.float32, (k,))])


def as_records(ind: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(indices, distances) of a block as one structured array (one dask output, split by :func:`split_records`)."""
    out = np.empty(len(ind), dtype=record_dtype(ind.shape[1]))
    out["i"], out["d"] = ind, dist
    return out


def drop_self(ind: np.ndarray, dist: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Remove one column per row: the row itself, or, where duplicates at
    distance 0 displaced it from the k + 1 found, the farthest neighbour."""
    n, k1 = ind.shape
    is_self = ind == rows[:, None]
    drop_at = np.where(is_self.any(axis=1), is_self.argmax(axis=1), k1 - 1)
    keep = np.ones_like(is_self)
    keep[np.arange(n), drop_at] = False
    return ind[keep].reshape(n, k1 - 1), dist[keep].reshape(n, k1 - 1)


def far_rows(ind: np.ndarray, dist: np.ndarray, radii: np.ndarray, k_radii: int) -> np.ndarray:
    """Rows of a neighbour query whose neighbours lie far beyond the reference rows' own radii.

    Row i is far when its m-th neighbour distance exceeds :data:`FAR_ROW_RATIO` times the median
    radius of its first m neighbours, m = min(k, ``k_radii``), the radii being each reference row's
    ``k_radii``-th neighbour distance. A row that searched the wrong
    part of an approximate index (another layer of the manifold) is such a row; so is a row far
    from all the data, which a wider search gives the same answer.
    """
    if not len(ind):
        return np.zeros(0, dtype=np.int64)
    m = min(ind.shape[1], k_radii)
    local = np.median(radii[ind[:, :m]], axis=1)
    return np.flatnonzero(dist[:, m - 1] > FAR_ROW_RATIO * local)


def nearest_other(index: NeighborIndex, rows: np.ndarray) -> np.ndarray:
    """Each of the index's own reference ``rows``' distance to its nearest other reference row."""
    ind, dist = index.query_block(rows, 2)
    return drop_self(ind, dist, np.arange(len(rows)))[1][:, 0]


def blockwise_query(Xd: da.Array, index: NeighborIndex, k: int, exclude_self: bool) -> tuple[da.Array, da.Array]:
    """Lazy (indices, distances) of every row block of ``Xd`` against ``index``."""
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    # One graph key for the index: shipped to each worker once. The name is
    # fixed at fit time; letting dask tokenize the index would pickle the
    # whole tree just to name the key (seconds for a large index).
    index_key = dask.delayed(index, name=index._key_name, traverse=False)
    record = record_dtype(k)
    records = da.map_blocks(
        _query_records, Xd, index_key, k, exclude_self, drop_axis=1, dtype=record, meta=np.empty((0,), dtype=record)
    )
    return split_records(records, k)


#: Tasks per worker thread at least when every row of a data set in memory is queried (an all-rows graph):
#: every row costs about the same, and when a thread has only a few large blocks the last one runs alone
#: (1M x 50 single-cell PCs against faiss's HNSW, 2 threads: 9 blocks of 123,361 rows).
QUERY_TASKS_PER_THREAD = 16


def split_for_balance(Xd: da.Array) -> da.Array:
    """``Xd`` with each row block split evenly so there are :data:`QUERY_TASKS_PER_THREAD` tasks per thread.

    Each new block lies inside one old block: nothing is joined.
    """
    pieces = -(-QUERY_TASKS_PER_THREAD * parallelism() // max(1, Xd.numblocks[0]))
    if pieces <= 1:
        return Xd
    rows = tuple(
        part
        for size in Xd.chunks[0]
        for part in np.diff(np.linspace(0, size, min(pieces, size) + 1).astype(int))
        if part
    )
    return Xd.rechunk({0: rows})


def split_records(records: da.Array, k: int) -> tuple[da.Array, da.Array]:
    """The (indices, distances) arrays of a dask array of neighbour records (fields ``i``, ``d``)."""
    chunks = (records.chunks[0], (k,))
    ind, dist = (
        da.map_blocks(_field, records, f, new_axis=1, chunks=chunks, dtype=t, meta=np.empty((0, 0), t))
        for f, t in (("i", np.int64), ("d", np.float32))
    )
    return ind, dist


def _field(records: np.ndarray, name: str) -> np.ndarray:
    return records[name]


def warm_up(metric: str = "euclidean") -> float:
    """Compile pynndescent's numba code in this process now; returns the seconds taken.

    Run it once per worker before timing-sensitive work:
    ``client.run(bigdr.graph.neighbors.warm_up)``. numba caches compiled code
    on disk (in pynndescent's ``__pycache__``, or ``NUMBA_CACHE_DIR`` when
    that is set or the package directory is read-only), so later processes
    on the same machine load it instead of compiling.
    """
    import time

    from pynndescent import NNDescent

    t0 = time.perf_counter()
    data = np.random.default_rng(0).standard_normal((500, 8)).astype(np.float32)
    index = NNDescent(data, n_neighbors=10, metric=metric, random_state=0)
    index.query(data[:10], k=5)
    return time.perf_counter() - t0
