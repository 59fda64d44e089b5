"""Isomap for millions of rows (Tenenbaum, de Silva & Langford 2000).

Isomap approximates geodesic distances on the data manifold by shortest
paths through a neighbourhood graph (kNN or epsilon), then embeds them by
classical MDS. Three modes share one code path: a *reference set* of rows
on which the graph is built, ``m`` landmarks among them, the geodesics
``G`` (reference rows x landmarks) by Dijkstra from every landmark, landmark
MDS on the landmarks' block of ``G``, and triangulation of every row from
its squared geodesics to the landmarks (:mod:`bigdr.core.triangulation`).

``exact``
    Graph of all rows, every row a landmark: classical MDS of the full
    geodesic matrix, as scikit-learn's Isomap. O(n^2) memory.
``landmark``
    Graph of all rows (O(n k) in one process), Dijkstra from ``m``
    landmarks only (de Silva & Tenenbaum 2003, "Global versus local methods
    in nonlinear dimensionality reduction"), split over dask workers by
    landmark. O(n k + n m) memory, never n x n.
``sampled``
    For data larger than one process: the graph is built on a uniform
    sample of ``max_samples`` rows (one pass), the geodesics among the
    sample as above, and every row is attached to the sample through its
    ``n_neighbors`` nearest sample rows: ``g(x, l) = min_j |x - s_j| +
    G(s_j, l)``, then triangulated, blockwise. Memory independent of n.
    The same attachment is ``transform`` in every mode (with the reference
    set as the sample), so new rows embed without refitting.
"""

from __future__ import annotations

import warnings
from typing import Any

import dask.array as da
import numpy as np
import scipy.sparse as sp

from .._random import LANDMARK_STREAM, resolve_seed
from .._validation import check_choice, check_int, check_landmark_span, check_n_features, check_real
from ..base import DEPRECATED, ExtensionEstimator, wants_numpy
from ..blockwise.sampling import SAMPLE_CHUNK_BYTES, keys_of, maxmin, row_keys, uniform_sample
from ..core.dimension import grown_sample, intrinsic_dimension, warn_if_sparse
from ..core.drift import empirical_threshold
from ..core.triangulation import (
    Triangulation,
    aligned,
    alignment_rows,
    geodesic_mds,
    residual_variance,
    rigid_alignment,
    triangulate_distances,
)
from ..exceptions import DisconnectedGraphWarning
from ..graph.incremental import relax_geodesics, reservoir, update_knn
from ..graph.knn import knn_graph
from ..graph.neighbors import NeighborIndex, SklearnSearch, nearest_other
from ..graph.sparse import (
    check_graph_params,
    check_graph_size,
    csr_from_lists,
    landmark_geodesics,
    radius_graph,
    resolve_components,
)
from ..io import as_array, from_numpy, rows_in_memory
from ..metrics._sample import check_fitted_sample
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming
from .geodesic import GeodesicExtension

#: ``landmarks="auto"``: exact Isomap up to this many rows.
EXACT_MAX = 2_000
#: Exact mode refuses more rows than this (the n x n geodesics would pass 6 GiB).
EXACT_LIMIT = 40_000
#: ``landmarks="auto"``: this many landmarks above ``EXACT_MAX`` rows.
DEFAULT_LANDMARKS = 256
#: ``max_samples="auto"``: the graph of all rows up to this many rows, a sample above.
GRAPH_ALL_MAX = 200_000
#: ``max_samples="auto"``: the smallest sample above ``GRAPH_ALL_MAX`` rows
#: (more when the manifold needs it: :func:`bigdr.core.dimension.rows_needed`).
DEFAULT_GRAPH_SAMPLE = 100_000
#: ``max_samples="auto"`` never samples more rows than this (the graph is held in one process).
GRAPH_SAMPLE_MAX = 1_000_000
#: Memory model (calibrated by benchmarks/bench_memory.py): bytes per kNN edge at
#: the peak (indices, distances, the union graph in COO and CSR, Dijkstra's
#: copy), copies of the graph rows, copies of the geodesic matrix (two in the fit, and the
#: placement's copy in the graph's locality order), and the degree assumed for a radius graph.
EDGE_BYTES = 55
ROW_COPIES = 3
GEODESIC_COPIES = 3
RADIUS_DEGREE = 32
#: Sample of reference rows on which the residual variance is estimated.
RESIDUAL_SAMPLE = 1_000
#: Radius mode: rows are attached through their reference rows within the
#: radius among this many nearest.
RADIUS_ATTACH = 32


#: What Isomap can do with a disconnected graph (see :func:`bigdr.graph.sparse.resolve_components`).
ON_DISCONNECTED = ("raise", "largest", "join")


class Isomap(SklearnSearch, ExtensionEstimator):
    """Isomap embedding, exact or by landmarks, for data of any size.

    ``transform`` places new rows blockwise: a row's geodesic to a landmark is the shortest way through one
    of its nearest reference rows (``|x - s_j| + G(s_j, l)``, as scikit-learn's), then it is triangulated;
    training rows come back at their fitted coordinates.

    Parameters
    ----------
    n_components : int
        Coordinates of the embedding.
    n_neighbors : int or None
        Neighbours per row in the kNN graph (union-symmetrised, as scikit-learn). Default 10: scikit-learn's 5 often
        leaves large noisy samples disconnected. Set to None when ``radius`` is given.
    radius : float or None
        Epsilon graph instead: rows within ``radius`` are joined (exact, KD-tree metrics only). New rows attach
        through their reference rows within the radius among the nearest 32 (always the nearest one).
    landmarks : "auto", None, int or array of rows
        ``None``: exact Isomap (all rows are landmarks; at most 40,000 rows). int ``m``: landmark Isomap with ``m``
        landmarks chosen among the reference rows. A 2-D array: these rows (added to the graph) are the landmarks.
        ``"auto"``: exact up to 2,000 rows, else 256 landmarks.
    max_samples : "auto", None or int
        Rows the neighbourhood graph is built on. ``None``: all rows (held in this process, O(n k)). int ``M``: a
        uniform sample of ``M`` rows drawn in one pass; every row is attached to the sample (memory independent of
        n). ``"auto"``: all rows up to 200,000 rows, else a sample sized to the manifold: the dimension ``m`` is
        estimated from the neighbour distances of a first 100,000-row sample (Levina & Bickel 2004), and when the
        manifold needs more rows, ``2000 * 10**(m - 2) * 10 / n_neighbors``
        (:func:`bigdr.core.dimension.rows_needed`), the sample is drawn again that large (at most 1,000,000 rows;
        all rows when that is more than n). A sampled graph smaller than that rule asks for (a given int, or the
        cap) warns with a ``SparseGraphWarning``: geodesics through a sparse graph of such a manifold are poor.
    landmark_method : {"random", "maxmin"}
        How landmarks are picked among the reference rows: uniformly, or by farthest-point selection (even
        coverage).
    metric : str
        Distance for the graph (``euclidean``, ``manhattan``, ``chebyshev``, ``cosine``, or any metric of the
        neighbour search).
    neighbor_method : {"auto", "kdtree", "brute", "faiss", "nndescent"}
        Neighbour search (:func:`bigdr.knn_graph`).
    on_disconnected : {"raise", "largest", "join"}
        What to do when the graph has several components. ``raise``: a ValueError naming the component sizes.
        ``largest``: landmarks only in the largest component; rows that cannot reach it get NaN coordinates (with a
        warning). ``join``: link each component to its nearest point outside it until the graph is connected.
    random_state : int or None
        Seed of the sample, the landmark draw and NN-descent (kept in ``seed_``).
    eigen_solver, tol, max_iter : {"auto", "arpack", "dense"}, float, int or None
        The landmarks' eigensolver (:func:`bigdr.core.eigen.top_eigh`); ``tol`` (0: machine precision) and
        ``max_iter`` are ARPACK's.
    path_method : {"auto", "FW", "D"}
        scikit-learn's shortest-path algorithm: the geodesics are the same exact graph distances whichever is named,
        computed by Dijkstra from the landmarks in parallel (Floyd-Warshall's n^3 does not scale).
    neighbors_algorithm : {"auto", "brute", "kd_tree", "ball_tree"}
        scikit-learn's name for the search (``ball_tree``: the k-d tree, same neighbours); ``"auto"``:
        ``neighbor_method`` decides.
    p, metric_params : float, dict or None
        With ``metric="minkowski"``, ``p`` = 1, 2 or inf is ``manhattan``, ``euclidean`` or ``chebyshev``.
    n_jobs : None or int
        Accepted for scikit-learn's signature; dask's scheduler runs the work.
    check_sample : bool
        With a sampled graph, measure what halving the sample costs: fit again on a random half of it, embed
        20,000 rows held out from the sample with both fits, and compare ``R_NX(n_neighbors)`` (the share of
        each row's neighbours kept, above chance) on 1,000 of them (``sample_check_``); where halving costs
        0.05 or more (beyond 3 standard errors), warn (``SparseGraphWarning``) with both figures. Costs a
        pass over X and a fit on half the sample. A diagnostic, off by default: where every sample size
        fits poorly the difference is erratic (``docs/metrics.md``).
    graph_sample : "deprecated"
        The 0.1 name of ``max_samples``, accepted with a FutureWarning until 0.3.

    Attributes
    ----------
    graph_recall_ : float or None, the fitted graph's :attr:`bigdr.KNNGraph.recall` (None for a radius graph)
    mode_ : {"exact", "landmark", "sampled"}
    intrinsic_dimension_ : float
        Levina-Bickel estimate of the manifold's dimension from the graph's neighbour distances (nan for a radius
        graph).
    embedding_ : (n, n_components), when ``X`` is in memory (numpy)
    eigenvalues_ : (n_components,)
        Leading eigenvalues of the landmarks' double-centred squared geodesics.
    negative_mass_ : float
        How far the geodesics are from Euclidean (see :class:`bigdr.ClassicalMDS`).
    residual_variance_ : (n_components,)
        ``1 - R^2`` between geodesic and embedding distances using the first 1..n_components axes, estimated on up
        to 1,000 reference rows x all landmarks. Look for the elbow to choose the dimension.
    reference_rows_ : (n_ref, p)
        Rows of the graph: all training rows, or the sample.
    geodesics_ : (n_ref, m) float32
        Graph distances from every reference row to every landmark.
    landmark_indices_ : (m,)
        Positions of the landmarks among the reference rows.
    n_components_found_ : int
        Number of connected components of the graph (before joining).
    sample_check_ : dict or None
        ``check_sample``'s figures: ``full``, ``half``, their paired ``gain`` and its ``error``, ``rising``.

    References
    ----------
    Tenenbaum, J. B., de Silva, V. & Langford, J. C. (2000). A global geometric
    framework for nonlinear dimensionality reduction. Science 290(5500),
    2319-2323. doi:10.1126/science.290.5500.2319

    de Silva, V. & Tenenbaum, J. B. (2003). Global versus local methods in
    nonlinear dimensionality reduction. Advances in Neural Information
    Processing Systems 15, 721-728.

    Levina, E. & Bickel, P. J. (2004). Maximum likelihood estimation of
    intrinsic dimension. Advances in Neural Information Processing Systems 17.

    Examples
    --------
    >>> import bigdr
    >>> from bigdr.datasets import make_swiss_roll
    >>> X, coords = make_swiss_roll(1500, noise=0.05, seed=0)
    >>> iso = bigdr.Isomap(n_components=2, n_neighbors=10)
    >>> Y = iso.fit_transform(X.compute())
    >>> Y.shape, iso.mode_
    ((1500, 2), 'exact')
    """

    _renamed_params = {"graph_sample": "max_samples"}

    def __init__(
        self,
        n_components: int = 2,
        n_neighbors: int | None = 10,
        radius: float | None = None,
        landmarks: Any = "auto",
        max_samples: Any = "auto",
        landmark_method: str = "random",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "raise",
        random_state: int = 0,
        eigen_solver: str = "auto",
        tol: float = 0.0,
        max_iter: int | None = None,
        path_method: str = "auto",
        neighbors_algorithm: str = "auto",
        p: float = 2,
        metric_params: dict | None = None,
        n_jobs: int | None = None,
        *,
        check_sample: bool = False,
        graph_sample: Any = DEPRECATED,
    ) -> None:
        self.n_components = n_components
        self.eigen_solver, self.tol, self.max_iter, self.path_method = eigen_solver, tol, max_iter, path_method
        self.neighbors_algorithm, self.p, self.metric_params = neighbors_algorithm, p, metric_params
        self.n_jobs = n_jobs
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.landmarks = landmarks
        self.max_samples = max_samples
        self.landmark_method = landmark_method
        self.metric = metric
        self.neighbor_method = neighbor_method
        self.on_disconnected = on_disconnected
        self.random_state = random_state
        self.check_sample = check_sample
        self.graph_sample = graph_sample

    def _check_params(self) -> None:
        check_int(self.n_components, "n_components")
        if (self.n_neighbors is None) == (self.radius is None):
            raise ValueError("Give exactly one of n_neighbors and radius (set the other to None).")
        if self.radius is not None:
            check_real(self.radius, "radius", 0, low_open=True)
        check_choice(self.landmark_method, "landmark_method", ("random", "maxmin"))
        check_choice(self.check_sample, "check_sample", (True, False))
        check_graph_params(
            self.n_neighbors, self._metric(), self._search(), self.on_disconnected, ON_DISCONNECTED,
            search="auto" if self.radius is None else "kdtree",
        )  # fmt: skip
        check_choice(self.eigen_solver, "eigen_solver", ("auto", "arpack", "dense"))
        check_choice(self.path_method, "path_method", ("auto", "FW", "D"))
        check_real(self.tol, "tol", 0)
        if self.max_iter is not None:
            check_int(self.max_iter, "max_iter")
        self.seed_ = resolve_seed(self.random_state)

    def _eigen(self) -> dict[str, Any]:  # models saved before 0.2 lack the parameters
        return {"solver": getattr(self, "eigen_solver", "auto"), "tol": float(getattr(self, "tol", 0.0)),
                "max_iter": getattr(self, "max_iter", None)}  # fmt: skip

    def _plan(self, n: int) -> tuple[str, int]:
        """The mode and the size of the reference set (before any landmark rows are added)."""
        gs = self._param("max_samples")
        if isinstance(gs, str) and gs == "auto":
            n_ref = n if n <= GRAPH_ALL_MAX else DEFAULT_GRAPH_SAMPLE
        elif gs is None:
            n_ref = n
        elif isinstance(gs, (int, np.integer)) and not isinstance(gs, bool) and gs >= 2:
            n_ref = min(int(gs), n)
        else:
            raise ValueError(f"max_samples must be 'auto', None or an int >= 2; got {gs!r}.")
        lm = self.landmarks
        if lm is None:
            if n_ref < n:
                raise ValueError("landmarks=None (exact Isomap) needs the graph of all rows; set max_samples=None.")
            if n > EXACT_LIMIT:
                raise ValueError(
                    f"Exact Isomap of {n} rows needs {n * n * 4 / 2**30:.1f} GiB of geodesics; "
                    f"use landmarks (an int, or 'auto') for more than {EXACT_LIMIT} rows."
                )
            return "exact", n_ref
        if isinstance(lm, str):
            if lm != "auto":
                raise ValueError(f"landmarks must be 'auto', None, an int or an array of rows; got {lm!r}.")
            if n_ref == n and n <= EXACT_MAX:
                return "exact", n_ref
        return ("sampled" if n_ref < n else "landmark"), n_ref

    def _n_landmarks(self, n_ref: int) -> int:
        lm = self.landmarks
        if isinstance(lm, str):
            return min(DEFAULT_LANDMARKS, n_ref)
        if isinstance(lm, bool) or not isinstance(lm, (int, np.integer)):
            raise TypeError(f"landmarks must be 'auto', None, an int or an array of rows; got {type(lm).__name__}.")
        if not self.n_components < lm <= n_ref:
            raise ValueError(
                f"landmarks={lm} must be more than n_components={self.n_components} and at most "
                f"the {n_ref} rows of the graph."
            )
        return int(lm)

    def _fit(self, X: Any) -> da.Array:
        self._check_params()
        for stale in ("graph_indices_", "graph_distances_", "embedding_", "_graph_index"):
            self.__dict__.pop(stale, None)
        Xd = as_array(X, name="X")
        n, p = Xd.shape
        mode, n_ref = self._plan(n)
        if self.n_components >= n:
            raise ValueError(f"n_components={self.n_components} must be less than the number of rows ({n}).")
        given = self._given_landmarks(p)
        self._check_memory(Xd)
        ref, graph, dist = self._reference_graph(X, Xd, mode, n_ref, given)
        self.intrinsic_dimension_ = intrinsic_dimension(dist) if dist is not None else float("nan")
        if mode == "sampled" and dist is not None and isinstance(self._param("max_samples"), str):
            grown = grown_sample(self.intrinsic_dimension_, self.n_neighbors or 1, n_ref, n, GRAPH_SAMPLE_MAX)
            if grown != n_ref:  # the manifold has more dimensions than the default sample resolves
                n_ref, mode = grown, ("sampled" if grown < n else "landmark")
                self._check_memory(Xd, plan=(mode, n_ref))
                ref, graph, dist = self._reference_graph(X, Xd, mode, n_ref, given)
        if mode == "sampled" and dist is not None:
            fix, k = "max_samples (None: all rows)", self.n_neighbors or 1
            warn_if_sparse(self.intrinsic_dimension_, k, n_ref, f"a sampled graph of {n_ref} rows", fix, 4)
        graph, eligible, self.n_components_found_ = resolve_components(
            graph,
            self.on_disconnected,
            points=ref,
            metric=self._metric(),
            hint="n_neighbors" if self.radius is None else "radius",
            allowed=ON_DISCONNECTED,
            stacklevel=4,
        )
        landmarks = self._choose_landmarks(ref, eligible, mode, given)
        G = landmark_geodesics(graph, landmarks)
        tri = geodesic_mds(G, landmarks, self.n_components, self.seed_, **self._eigen())

        index = self.__dict__.pop("_graph_index", None)
        if index is None or index.method_ == "brute":  # the graph's own search; new rows may want another
            index = NeighborIndex(self._metric(), self._search(), queried=True).fit(ref)
        self.mode_ = mode
        self.n_features_in_ = p
        self.reference_rows_ = ref
        self.geodesics_ = G
        self.landmark_indices_ = landmarks
        self.triangulation_ = tri.pinv
        self.landmark_sq_mean_ = tri.mean_sq
        assert tri.spectrum is not None  # set by geodesic_mds (None only when rebuilt from a saved model)
        self.eigenvalues_ = tri.spectrum.values
        self.negative_mass_ = tri.spectrum.negative_mass
        self._ext = self._placement(index, G, tri, len(ref))
        self.n_samples_seen_ = n
        self.reference_cap_ = self._cap(mode, len(ref) - (0 if given is None else len(given)))
        self._reset_drift()
        self.drift_threshold_ = empirical_threshold(dist[:, 0] if dist is not None else nearest_other(index, ref))

        ref_embedding = triangulate_distances(G, tri)
        self._set_residual_variance(G, tri, landmarks, eligible)
        self.sample_check_ = None
        if mode == "sampled" and getattr(self, "check_sample", False):  # models saved before check_sample lack it
            self.sample_check_ = check_fitted_sample(self, X, ref, self.reference_keys_, "max_samples", 3)
        if mode == "sampled":
            Y = self._extend(X)
            if wants_numpy(X):
                (self.embedding_,) = compute(Y)
            return Y
        embedding = ref_embedding[:n]
        unreached = int(np.isnan(embedding[:, 0]).sum())
        if unreached:
            warnings.warn(
                f"{unreached} of {n} rows lie outside the largest component and have NaN coordinates.",
                DisconnectedGraphWarning,
                stacklevel=3,
            )
        if wants_numpy(X):
            self.embedding_ = embedding
        return from_numpy(embedding, Xd.chunks[0])

    def _given_landmarks(self, p: int) -> np.ndarray | None:
        lm = self.landmarks
        if lm is None or isinstance(lm, (str, int, np.integer)):
            return None
        rows = np.asarray(as_array(lm, name="landmarks").compute())
        if rows.shape[1] != p:
            raise ValueError(f"The landmark rows have {rows.shape[1]} columns; X has {p}.")
        check_landmark_span(len(rows), self.n_components, "give more landmark rows than n_components.")
        return rows

    def _memory_parts(
        self, Xd: da.Array, in_memory: bool = False, plan: tuple[str, int] | None = None
    ) -> dict[str, Part]:
        n, p = Xd.shape
        check_graph_size(self.n_neighbors, n)
        mode, n_ref = plan or self._plan(n)
        k = self.n_neighbors if self.n_neighbors is not None else RADIUS_DEGREE
        lm = self.landmarks
        m = n_ref if mode == "exact" else (len(lm) if isinstance(lm, np.ndarray) else self._n_landmarks(n_ref))
        parts = {
            "rows": Part(ROW_COPIES * n_ref * p * 8, "the graph's rows and their search tree", "max_samples"),
            "graph": Part(EDGE_BYTES * n_ref * k, f"the neighbour graph ({n_ref:,} rows x {k})", "n_neighbors"),
            "geodesics": Part(GEODESIC_COPIES * n_ref * m * 4, f"geodesics to {m:,} landmarks", "landmarks"),
        }
        if mode == "exact":
            parts["mds"] = Part(4 * n * n * 8, "the n x n matrices of exact MDS", "landmarks")
        if mode == "sampled":  # only then are rows placed by the extension; all are reference rows otherwise
            piece = max(256, (32 << 20) // (4 * m))
            parts["place"] = streaming(2 * piece * m * 4, 1, "rows being placed", "place")
            parts["sample"] = streaming(SAMPLE_CHUNK_BYTES, 3, "blocks of the sampling pass", "sample")
        return parts

    def _reference_graph(
        self, X: Any, Xd: da.Array, mode: str, n_ref: int, given: np.ndarray | None
    ) -> tuple[np.ndarray, sp.csr_matrix, np.ndarray | None]:
        """The reference rows (a sample or all rows, plus given landmarks) and their graph."""
        if mode == "sampled":
            ref, rows = uniform_sample(X, n_ref, self.seed_)  # reads X in its own chunks
            keys = keys_of(rows, self.seed_)
        else:
            ref = rows_in_memory(Xd)
            keys = row_keys(0, len(ref), self.seed_)
        ref = np.ascontiguousarray(ref)
        if given is not None:
            ref = np.vstack([ref, given.astype(ref.dtype)])
            keys = np.concatenate([keys, np.full(len(given), -np.inf)])  # not data rows; always kept
        self.reference_keys_ = keys
        graph, dist = self._graph(ref)
        return ref, graph, dist

    def _graph(self, ref: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray | None]:
        """The graph on ``ref`` and, for a kNN graph, its neighbour distances."""
        if self.radius is not None:
            self.graph_recall_ = None
            return radius_graph(ref, self.radius, self._metric()), None
        k = check_int(self.n_neighbors, "n_neighbors")
        check_graph_size(k, len(ref), "rows of the graph")
        graph = knn_graph(ref, k, metric=self._metric(), method=self._search(), random_state=self.seed_)
        ind, dist = compute(graph.indices, graph.distances)
        self.graph_indices_, self.graph_distances_ = ind, dist  # the state partial_fit updates
        self._graph_index, self.graph_recall_ = graph.index, graph.recall  # the index attaches rows to ref
        return csr_from_lists(ind, dist, "union", "distance"), dist

    def _choose_landmarks(
        self, ref: np.ndarray, eligible: np.ndarray, mode: str, given: np.ndarray | None
    ) -> np.ndarray:
        if given is not None:
            idx = np.arange(len(ref) - len(given), len(ref))
            if not eligible[idx].all():
                raise ValueError("Some of the given landmark rows lie outside the largest component of the graph.")
            return idx
        candidates = np.flatnonzero(eligible)
        if mode == "exact":
            return candidates
        m = min(self._n_landmarks(len(ref)), len(candidates))
        rng = np.random.default_rng([self.seed_, LANDMARK_STREAM, 2])
        if self.landmark_method == "random":
            return np.sort(rng.choice(candidates, size=m, replace=False))
        first = int(rng.integers(len(candidates)))
        return candidates[maxmin(ref[candidates], m, first=first)]

    def _set_residual_variance(self, G: np.ndarray, tri: Triangulation, landmarks: np.ndarray, eligible: np.ndarray):
        rng = np.random.default_rng([self.seed_, LANDMARK_STREAM, 1])
        candidates = np.flatnonzero(eligible)
        rows = np.sort(rng.choice(candidates, size=min(RESIDUAL_SAMPLE, len(candidates)), replace=False))
        embed = triangulate_distances
        self.residual_variance_ = residual_variance(G[rows], embed(G[rows], tri), embed(G[landmarks], tri))

    def _cap(self, mode: str, n_ref: int) -> int | None:
        """Most data rows the reference set keeps as rows arrive (None: all)."""
        gs = self._param("max_samples")
        if gs is None:
            return None
        if isinstance(gs, str):  # "auto": the sample a fit drew, or all rows up to GRAPH_ALL_MAX
            return n_ref if mode == "sampled" else max(GRAPH_ALL_MAX, n_ref)
        return int(gs)

    def partial_fit(self, X: Any, y: Any = None) -> Isomap:
        """Learn from new rows without refitting (an unfitted model is fitted on them).

        The batch's drift is measured first (``drift_``, ``drift_history_``).
        Rows the reservoir keeps join the reference set, the neighbour lists
        and the landmark geodesics are updated locally
        (:mod:`bigdr.graph.incremental`), the landmark MDS is solved again and
        aligned to the previous one by orthogonal Procrustes over the kept
        reference rows (see ``docs/isomap.md``, "Updates").
        """
        if not self.__sklearn_is_fitted__():
            return self.fit(X)
        if self.radius is not None or not hasattr(self, "graph_indices_"):
            raise ValueError("partial_fit needs a kNN graph (n_neighbors); refit a radius-graph Isomap on all rows.")
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, "Isomap")
        n_b = Xd.shape[0]
        keys = row_keys(self.n_samples_seen_, self.n_samples_seen_ + n_b, self.seed_)
        protected = np.zeros(len(self.reference_rows_), dtype=bool)
        protected[self.landmark_indices_] = True
        keep, enter = reservoir(self.reference_keys_, protected, keys, self.reference_cap_)
        beyond = self.drift_count(Xd)
        take = np.flatnonzero(enter)
        count, entering = compute(beyond, Xd if len(take) == n_b else Xd[take])
        rule = self._drift_rule()  # the count was taken against the model as it was
        self._updated_state(keep, np.asarray(entering), np.concatenate([self.reference_keys_[keep], keys[take]]))
        self.record_drift(n_b, int(count), update=True, rule=rule)
        self.n_samples_seen_ += n_b
        n_data = int(np.isfinite(self.reference_keys_).sum())
        self.mode_ = "sampled" if n_data < self.n_samples_seen_ else "landmark"
        self.__dict__.pop("embedding_", None)  # the fit's rows are placed by transform from now on
        return self

    def _updated_state(self, keep: np.ndarray, entering: np.ndarray, keys: np.ndarray) -> None:
        """Compute the updated graph, geodesics and triangulation, then set them all (nothing set on error)."""
        upd = update_knn(
            self.reference_rows_, self.graph_indices_, self.graph_distances_, keep, entering,
            self._metric(), self._search(),
        )  # fmt: skip
        graph, eligible, found = resolve_components(
            csr_from_lists(upd.indices, upd.distances, "union", "distance"),
            self.on_disconnected,
            points=upd.rows,
            metric=self._metric(),
            allowed=ON_DISCONNECTED,
            stacklevel=4,
        )
        landmarks = upd.old_position[self.landmark_indices_]
        old_G = self.geodesics_[keep]
        G = np.vstack([old_G, np.full((len(entering), old_G.shape[1]), np.inf, dtype=old_G.dtype)])
        relax_geodesics(graph, G, upd.changed)
        tri = geodesic_mds(G, landmarks, self.n_components, self.seed_, **self._eigen())
        sample = alignment_rows(int(keep.sum()), [self.seed_, LANDMARK_STREAM, 3])
        before = triangulate_distances(old_G[sample], Triangulation(self.triangulation_, self.landmark_sq_mean_, None))
        R, t = rigid_alignment(triangulate_distances(G[sample], tri), before)
        tri = aligned(tri, R, t)
        assert tri.spectrum is not None
        self.reference_rows_, self.reference_keys_ = upd.rows, keys
        self.graph_indices_, self.graph_distances_ = upd.indices, upd.distances
        self.geodesics_, self.landmark_indices_, self.n_components_found_ = G, landmarks, found
        self.triangulation_, self.landmark_sq_mean_ = tri.pinv, tri.mean_sq
        self.eigenvalues_, self.negative_mass_ = tri.spectrum.values, tri.spectrum.negative_mass
        self.intrinsic_dimension_ = intrinsic_dimension(upd.distances)
        self.drift_threshold_ = empirical_threshold(upd.distances[:, 0])
        self._ext = self._placement(upd.index, G, tri, len(upd.rows))
        self._set_residual_variance(G, tri, landmarks, eligible)

    def _drift_rule(self) -> tuple[float, str]:
        return self.drift_threshold_, "nearest-reference distance"

    def _make_extension(self) -> GeodesicExtension:
        """A loaded model: rebuild the index from the stored reference rows."""
        tri = Triangulation(self.triangulation_, self.landmark_sq_mean_, None)
        index = NeighborIndex(self._metric(), self._search(), queried=True).fit(self.reference_rows_)
        return self._placement(index, self.geodesics_, tri, len(self.reference_rows_))

    def _placement(self, index: NeighborIndex, G: np.ndarray, tri: Triangulation, n_ref: int) -> GeodesicExtension:
        # A new row is attached through k reference rows; graph_distances_ is None for a radius graph.
        k = min(RADIUS_ATTACH if self.radius is not None else int(self.n_neighbors or 1), n_ref)
        return GeodesicExtension(
            index, G, tri, k, self.radius, self.__dict__.get("graph_distances_"), self.__dict__.get("graph_indices_")
        )

    def summary(self) -> dict[str, Any]:
        return {
            "eigenvalues": self.eigenvalues_.tolist(),
            "negative_mass": self.negative_mass_,
            "mode": self.mode_,
            "residual_variance": self.residual_variance_.tolist(),
            "n_landmarks": len(self.landmark_indices_),
            "graph_rows": len(self.reference_rows_),
            "intrinsic_dimension": self.intrinsic_dimension_,
            "sample_check": self.__dict__.get("sample_check_"),
        }

    def describe(self) -> str:
        return (
            f"Isomap ({self.mode_}, {len(self.landmark_indices_)} landmarks, graph of "
            f"{len(self.reference_rows_)} rows): residual variance {self.residual_variance_[-1]:.3g}"
        )
