"""Search back ends of :class:`bigdr.graph.neighbors.NeighborIndex`: one class per method.

Back ends
---------
``"kdtree"`` (:class:`KDTreeBackend`)
    Exact, ``scipy.spatial.cKDTree`` (Minkowski metrics; cosine through unit
    vectors). Fast in low dimension.
``"nndescent"`` (:class:`NNDescentBackend`)
    Approximate, pynndescent (NN-descent of Dong, Moses & Li 2011 with
    random-projection-tree initialisation); any metric pynndescent offers.
    Its numba code compiles on first use in every process (see
    ``docs/neighbors.md``).
``"faiss"`` (:class:`FaissBackend`)
    Approximate, faiss's HNSW graph (Malkov & Yashunin 2018) on float32
    rows; euclidean, squared euclidean and cosine. Compiled ahead (a wheel):
    no compilation at run time. Optional dependency ``faiss-cpu``.
``"brute"`` (:class:`BruteBackend`)
    Exact, blockwise distance matrices against the reference rows; any
    metric of ``scipy.spatial.distance.cdist``. For small reference sets.
``"auto"``
    ``kdtree`` when the metric allows it and the dimension is at most
    ``KDTREE_MAX_DIM``; ``brute`` for small reference sets in high dimension;
    else ``faiss`` for its metrics (when installed) and ``nndescent`` for the
    rest. Thresholds and the reasons in ``benchmarks/results/neighbors.md``.

A new back end is one subclass of :class:`Backend` added to ``BACKENDS``.

References
----------
Dong, W., Moses, C. & Li, K. (2011). Efficient k-nearest neighbor graph
construction for generic similarity measures. Proc. WWW 2011, 577-586.
doi:10.1145/1963405.1963487

Malkov, Y. A. & Yashunin, D. A. (2018). Efficient and robust approximate
nearest neighbor search using hierarchical navigable small world graphs.
IEEE Trans. Pattern Analysis and Machine Intelligence 42(4), 824-836.
doi:10.1109/TPAMI.2018.2889473
"""

from __future__ import annotations

import numpy as np

from ..core.distances import CDIST_NAMES, KDTREE_METRICS, paired_distances, unit_rows
from ..runtime.compute import local_threads

#: Bytes of the distance block of a brute-force query piece: a block that stays in
#: cache is 3x faster to fill and select from than one of 2,048 rows (20,000 x 50
#: reference rows: 84 against 300 us a row on one core), which pages in fresh memory.
BRUTE_BLOCK_BYTES = 8 * 2**20
#: An approximate search asked again (a row it could not find itself, or one whose neighbours lie far
#: off) searches this many times as wide. faiss's HNSW (16 links, efSearch 64) on 300,000 rows of a
#: 4-D manifold in 40-D: 38 rows missed themselves, with neighbours up to 4.2x the true k-th distance
#: (a layer of the manifold away); searched again with efSearch 256, every one found its true
#: neighbours (a one-off measurement).
REQUERY_WIDTH = 4
#: Mean recall of the k nearest rows that an all-rows graph from an approximate index aims at
#: (:meth:`Backend.calibrate`). On single-cell PCs (1M x 50, about 17 intrinsic dimensions) faiss's
#: HNSW at efSearch 64 found 0.981 of each row's 14 nearest, its misses mostly across cell types, and
#: the diffusion map's components 1 and 2 then agreed with scanpy's at Spearman 0.993 and 0.977; at
#: efSearch 128 (0.993) at 0.994 and 0.995, at 256 (0.997) at 0.995 and 0.995 (one-off, 2026-11-29,
#: the same PCs for both; docs/neighbors.md).
RECALL_TARGET = 0.99
#: Stored rows whose exact neighbours :meth:`Backend.calibrate` computes (the recall's standard error
#: about 0.002 at the target, neighbours of one row being correlated).
CALIBRATION_ROWS = 500
#: cKDTree beats NN-descent up to about this many dimensions (measured).
KDTREE_MAX_DIM = 15
#: Widest faiss efSearch the calibration tries (each step doubles it from the default 64).
EF_SEARCH_MAX = 1024
#: Widest pynndescent query epsilon the calibration tries (each step doubles it from the default 0.1).
QUERY_EPSILON_MAX = 0.8


def nndescent_metrics() -> set[str]:
    try:
        from pynndescent.distances import named_distances
    except ImportError:  # pragma: no cover - pynndescent is a dependency
        return set()
    return set(named_distances)


def faiss_available() -> bool:
    """Whether faiss can be imported (looked up without importing it)."""
    import importlib.util

    return importlib.util.find_spec("faiss") is not None


class Backend:
    """One search method: built on reference rows, queried with numpy blocks (on workers)."""

    def __init__(self, metric: str, random_state: int | None = None, options: dict | None = None) -> None:
        self.metric = metric
        self.random_state = random_state
        self.options = dict(options or {})

    def build(self, reference: np.ndarray) -> None:
        raise NotImplementedError

    #: Whether :meth:`query` finds the true nearest rows (otherwise :meth:`requery` may find nearer ones).
    exact = True

    def query(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and distances of the ``k`` nearest reference rows, ascending."""
        raise NotImplementedError

    def requery(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`query` with a wider search, for rows whose first answer looks wrong."""
        return self.query(block, k)

    #: The search option that :meth:`calibrate` widens (approximate back ends); one given by the
    #: user is kept and only measured.
    width_option: str | None = None

    def calibrate(self, sample: np.ndarray, k: int, target: float) -> float:
        """Widen the search until it finds ``target`` of the ``k`` nearest rows of ``sample`` (stored
        rows, searched as queries); the recall reached. Exact back ends: 1."""
        return 1.0

    def _widen_to(self, sample: np.ndarray, k: int, kth: np.ndarray, target: float, start: float, most: float) -> float:
        """Double :attr:`width_option` from ``start`` until the ``k`` found for ``sample``'s rows reach
        ``target`` of :func:`recall_within` their true k-th distances ``kth`` (at most ``most``); the
        recall reached."""
        name = str(self.width_option)
        given = name in self.options
        while True:
            recall = recall_within(self.query(sample, k)[1], kth)
            width = self.options.get(name, start)
            if given or recall >= target or width >= most:
                return recall
            self.options[name] = 2 * width

    #: Whether :meth:`self_graph` builds the graph of all rows directly
    #: (otherwise every row is queried against an index of all rows).
    builds_self_graph = False

    @classmethod
    def self_graph(
        cls, data: np.ndarray, k: int, metric: str, random_state: int | None, options: dict | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The (k + 1)-neighbour graph of ``data`` itself (each row among its own neighbours)."""
        raise NotImplementedError


class KDTreeBackend(Backend):
    def build(self, reference: np.ndarray) -> None:
        from scipy.spatial import cKDTree

        data = unit_rows(reference) if self.metric == "cosine" else reference
        self._tree = cKDTree(data, balanced_tree=False, compact_nodes=False)

    def query(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = unit_rows(block) if self.metric == "cosine" else block
        dist, ind = self._tree.query(q, k=k, p=KDTREE_METRICS[self.metric])
        dist, ind = dist.reshape(len(block), k), ind.reshape(len(block), k)
        if self.metric == "cosine":  # chord length -> cosine distance
            dist = dist**2 / 2
        return ind, dist

    def radius_pairs(self, block: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """Every (row of ``block``, reference row) pair closer than ``radius``, as two index arrays."""
        from scipy.spatial import cKDTree

        if self.metric != "euclidean":
            raise ValueError(f"Radius queries are euclidean; this index uses {self.metric!r}.")
        pairs = cKDTree(block).sparse_distance_matrix(self._tree, radius, output_type="ndarray")
        return pairs["i"].astype(np.int64, copy=False), pairs["j"].astype(np.int64, copy=False)


class BruteBackend(Backend):
    def build(self, reference: np.ndarray) -> None:
        self._reference = reference
        self._ref_sq = np.einsum("ij,ij->i", reference, reference)
        self._unit = unit_rows(reference) if self.metric == "cosine" else None

    def query(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        ind = np.empty((len(block), k), dtype=np.int64)
        dist = np.empty((len(block), k))
        step = int(np.clip(BRUTE_BLOCK_BYTES // (8 * max(len(self._reference), 1)), 16, 2048))
        for s in range(0, len(block), step):
            q = block[s : s + step]
            ind[s : s + len(q)], dist[s : s + len(q)] = self._rows(q, k)
        return ind, dist

    def _rows(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact k nearest reference rows of the rows of ``q`` by full distance rows."""
        from scipy.spatial.distance import cdist

        ref = self._reference
        if self.metric in ("euclidean", "sqeuclidean", "cosine"):
            # Rank by a gemm (|q|^2 + |r|^2 - 2 q r^T: BLAS speed, 20-50x cdist
            # in 50-D), in the reference rows' own precision (a float64 query
            # against float32 rows would copy them to float64 for every piece),
            # then recompute the chosen distances exactly in float64 so the
            # cancellation of that formula never reaches the result.
            qr = q.astype(ref.dtype, copy=False) if ref.dtype.kind == "f" else q
            if self._unit is not None:
                score = -(unit_rows(qr) @ self._unit.T)
            else:
                score = qr @ ref.T
                score *= -2.0
                score += self._ref_sq
        else:
            score = cdist(q, ref, metric=CDIST_NAMES.get(self.metric, self.metric))
        if k < score.shape[1]:
            cand = np.argpartition(score, k - 1, axis=1)[:, :k]
        else:
            cand = np.tile(np.arange(score.shape[1]), (len(q), 1))
        exact = paired_distances(q, ref, cand, self.metric)
        order = np.argsort(exact, axis=1, kind="stable")
        return np.take_along_axis(cand, order, axis=1), np.take_along_axis(exact, order, axis=1)


def recall_within(found: np.ndarray, kth: np.ndarray) -> float:
    """The fraction of ``found`` distances (rows of k) no farther than each row's true k-th, ``kth`` (a
    column): the recall of the k nearest, ties counted."""
    return float((found <= kth + 1e-6 * np.abs(kth) + 1e-12).mean())  # two searches may round apart


def exact_kth(reference: np.ndarray, queries: np.ndarray, k: int, metric: str) -> np.ndarray:
    """Each query row's distance to its ``k``-th nearest reference row (a column), found exactly: by a
    k-d tree in few dimensions (on 1M x 3 rows, 500 queries: a fraction of a second, where brute force
    selects among 500 million distances), else by brute force."""
    tree = metric in KDTREE_METRICS and reference.shape[1] <= KDTREE_MAX_DIM
    exact = (KDTreeBackend if tree else BruteBackend)(metric)
    exact.build(reference)
    return exact.query(queries, k)[1][:, -1:]


def _nndescent_kwargs(options: dict | None) -> dict:
    """pynndescent's ``NNDescent`` arguments among the search options (``query_epsilon`` is the query's)."""
    kw = {k: v for k, v in (options or {}).items() if k not in ("query_epsilon", "build_threads")}
    if "build_threads" in (options or {}):
        kw.setdefault("n_jobs", int(options["build_threads"]))  # type: ignore[index]
    return kw


class NNDescentBackend(Backend):
    exact = False

    def build(self, reference: np.ndarray) -> None:
        from pynndescent import NNDescent

        kw = _nndescent_kwargs(self.options)
        kw.setdefault("n_neighbors", 30)
        self._nnd = NNDescent(reference, metric=self.metric, random_state=self.random_state, **kw)
        self._nnd.prepare()
        self._reference = reference  # the calibration's exact search, in this process only

    def __getstate__(self) -> dict:
        # pynndescent's index ships its own copy of the rows; the calibration runs where the index is built.
        return {k: v for k, v in self.__dict__.items() if k != "_reference"}

    width_option = "query_epsilon"

    def calibrate(self, sample: np.ndarray, k: int, target: float) -> float:
        """Double ``query_epsilon`` from its default 0.1 (at most :data:`QUERY_EPSILON_MAX`) until the
        search finds ``target`` of the ``k`` nearest stored rows of ``sample``, found exactly
        (:func:`exact_kth`)."""
        kth = exact_kth(self._reference, sample, k, self.metric)
        return self._widen_to(sample, k, kth, target, 0.1, QUERY_EPSILON_MAX)

    def query(self, block: np.ndarray, k: int, width: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        # pynndescent searches within (1 + epsilon) of the k-th distance found: widen epsilon.
        return self._nnd.query(block, k=k, epsilon=width * self.options.get("query_epsilon", 0.1))

    def requery(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.query(block, k, width=REQUERY_WIDTH)

    builds_self_graph = True

    @classmethod
    def self_graph(
        cls, data: np.ndarray, k: int, metric: str, random_state: int | None, options: dict | None
    ) -> tuple[np.ndarray, np.ndarray]:
        from pynndescent import NNDescent

        kw = _nndescent_kwargs(options)
        kw["n_neighbors"] = max(k + 1, int(kw.get("n_neighbors", 0)))  # a denser graph: its k + 1 nearest kept
        ind, dist = NNDescent(data, metric=metric, random_state=random_state, **kw).neighbor_graph
        return ind[:, : k + 1], dist[:, : k + 1]


#: A block of queries against a large faiss index is searched in the order of each row's nearest of this
#: many k-means centroids of the stored rows, so that consecutive searches walk the same part of the graph and
#: find it in cache; every row's answer is the same. One-off (1M x 50 single-cell PCs, 250,000 stored rows
#: queried in blocks of 31,250 and 62,500 on 2 threads, efSearch 128): 16.0 and 15.8 s in row order, 12.0 and
#: 12.1 s ordered by 64 centroids, 11.6 and 11.4 s by 256, 12.0 and 11.5 s by 1,024.
LOCALITY_CENTROIDS = 256
#: Stored rows from which queries are put in that order (a smaller index stays in cache whatever the order).
LOCALITY_MIN_ROWS = 100_000


class FaissBackend(Backend):
    """faiss's HNSW index. Options: ``hnsw_m`` (graph degree, 16), ``ef_construction`` (64), ``ef_search`` (64;
    at least twice ``k`` at query time). Measured on manifolds of intrinsic dimension
    5-12 in 50-784 dimensions: recall@15 at least 0.9998 at 27-35% of the build time of (32, 200);
    on single-cell PCs of about 17 dimensions recall@14 0.981 (0.992 at ``ef_search`` 128, 1.7x the query time).
    The recall is a mean: a few rows in a sparse region can miss their neighbourhood altogether
    (see :data:`REQUERY_WIDTH`), which :meth:`requery` searches again."""

    exact = False

    def build(self, reference: np.ndarray) -> None:
        import faiss

        data = self._prepare(reference)
        metric = faiss.METRIC_INNER_PRODUCT if self.metric == "cosine" else faiss.METRIC_L2
        index = faiss.IndexHNSWFlat(data.shape[1], int(self.options.get("hnsw_m", 16)), metric)
        index.hnsw.efConstruction = int(self.options.get("ef_construction", 64))
        # A build inside a dask task gets the task's one thread; one in this process, the
        # scheduler's threads (OMP_NUM_THREADS=1, set to keep BLAS to a thread per task, would
        # otherwise leave the others idle: 1M x 50 rows, 78 s on one thread, 43 s on two).
        faiss.omp_set_num_threads(self._own_threads())
        index.add(data)
        self._index = index
        self._centroids = self._locality_centroids(data)

    def _locality_centroids(self, data: np.ndarray) -> np.ndarray | None:
        """k-means centroids of a sample of the stored rows that order query blocks (:data:`LOCALITY_CENTROIDS`)."""
        import faiss

        n = len(data)
        if n < LOCALITY_MIN_ROWS:
            return None
        rng = np.random.default_rng(self.random_state)
        sample = data[np.sort(rng.choice(n, min(n, 40 * LOCALITY_CENTROIDS), replace=False))]
        kmeans = faiss.Kmeans(data.shape[1], LOCALITY_CENTROIDS, niter=10, seed=int(rng.integers(2**31)))
        kmeans.train(sample)
        return np.asarray(kmeans.centroids, dtype=np.float32)

    def _own_threads(self) -> int:
        """Threads of work done once on the whole index (build, calibration): a task's one inside a cell."""
        return int(self.options.get("build_threads") or local_threads())

    def _prepare(self, rows: np.ndarray) -> np.ndarray:
        rows = unit_rows(rows) if self.metric == "cosine" else rows
        return np.ascontiguousarray(rows, dtype=np.float32)

    def query(self, block: np.ndarray, k: int, width: int = 1) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        # efSearch per call, not on the shared index: a task's wider search of its lost rows set it there
        # while another task searched, whose answer then depended on the threads' timing
        params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # swig class, absent from what mypy sees
        params.efSearch = width * max(int(self.options.get("ef_search", 64)), 2 * k)
        faiss.omp_set_num_threads(1)  # one dask task, one thread (as BLAS is capped)
        q = self._prepare(block)
        order = self._locality_order(q)
        if order is None:
            score, ind = self._index.search(q, k, params=params)
        else:  # searched in cache-friendly order, answered in the block's
            score, ind = np.empty((len(q), k), np.float32), np.empty((len(q), k), np.int64)
            score[order], ind[order] = self._index.search(q[order], k, params=params)
        short = np.flatnonzero((ind < 0).any(axis=1))
        if len(short):  # the graph search ended with fewer than k rows (-1): search the stored rows exactly
            score[short], ind[short] = faiss.downcast_index(self._index.storage).search(q[short], k)
        return ind.astype(np.int64), self._distances(score)

    def _locality_order(self, q: np.ndarray) -> np.ndarray | None:
        """The rows of ``q`` grouped by their nearest locality centroid; None when there are none."""
        centroids = self.__dict__.get("_centroids")  # absent from indexes pickled by bigdr < 0.3
        if centroids is None or len(q) < 2 * len(centroids):
            return None
        import faiss

        _, nearest = faiss.knn(q, centroids, 1)
        return np.argsort(nearest[:, 0], kind="stable")

    def _distances(self, score: np.ndarray) -> np.ndarray:
        """faiss's scores (squared L2, or inner products of unit rows) as the metric's distances."""
        if self.metric == "cosine":
            return 1.0 - score
        if self.metric == "euclidean":
            return np.sqrt(np.maximum(score, 0))
        return score

    def requery(self, block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.query(block, k, width=REQUERY_WIDTH)

    width_option = "ef_search"

    def calibrate(self, sample: np.ndarray, k: int, target: float) -> float:
        """Double ``ef_search`` from its default 64 (at most :data:`EF_SEARCH_MAX`) until the search
        finds ``target`` of the ``k`` nearest stored rows of ``sample``, found exactly in the index's
        flat storage."""
        import faiss

        faiss.omp_set_num_threads(self._own_threads())
        score, _ = faiss.downcast_index(self._index.storage).search(self._prepare(sample), k)
        return self._widen_to(sample, k, self._distances(score[:, -1:]), target, 64, EF_SEARCH_MAX)

    def __getstate__(self) -> dict:
        # faiss indexes are C++ objects: ship their own serialisation, not a pickle of them.
        import faiss

        state = dict(self.__dict__)
        if "_index" in state:
            state["_index"] = faiss.serialize_index(state["_index"])
        return state

    def __setstate__(self, state: dict) -> None:
        if "_index" in state:
            import faiss

            state["_index"] = faiss.deserialize_index(state["_index"])
        self.__dict__.update(state)


#: Metrics the faiss back end computes.
FAISS_METRICS = ("euclidean", "sqeuclidean", "cosine")

BACKENDS: dict[str, type[Backend]] = {
    "kdtree": KDTreeBackend,
    "brute": BruteBackend,
    "nndescent": NNDescentBackend,
    "faiss": FaissBackend,
}
SEARCH_METHODS = ("auto", *BACKENDS)
