"""Locally linear embedding and its variants, on all rows or by locally linear landmarks.

Each row is reconstructed from its ``k`` nearest neighbours with weights that
sum to one, ``min sum_i |x_i - sum_j W_ij x_j|^2`` (Roweis & Saul 2000), and
the embedding keeps those weights: the ``d`` bottom eigenvectors of ``M = (I
- W)^T (I - W)`` after the constant one, ``Y^T Y = I``. The variants
(modified, Hessian, LTSA) change the local blocks of ``M``
(:mod:`bigdr.core.local_linear`).

**All rows** (up to :data:`ALL_ROWS_MAX`): the kNN graph of all rows, the
local factors in row blocks on the workers (:mod:`bigdr.graph.barycentric`), and
the eigenvectors of ``M = C^T C`` by LOBPCG on ``C`` preconditioned by a
sparse LU of ``I - W`` (:func:`bigdr.core.sparse_eigen.factored_smallest_eigh`):
the small eigenvalues of standard LLE's ``M`` fall as ``n^-2`` (1e-15 of
its norm at a million rows), below the rounding of the assembled matrix
that ARPACK's shift-invert (scikit-learn's solver) and AMG need. The
variants' small eigenvalues stay far above it, and their LOBPCG is
preconditioned by the LU of their own assembled ``M``. Rows that are in no
index set (the Hessian and LTSA variants build a row's factor on its
neighbours alone, so a row nobody lists has an empty column and an exact
null vector) are left out of the eigenproblem and placed by barycentric
weights, as ``transform`` places new rows.

**Landmarks** (Locally Linear Landmarks, Vladymyrov & Carreira-Perpinan
2013): every row is a barycentric combination of its nearest of ``m``
landmarks, ``y = z(x)^T Y_L``, and ``Y_L`` minimises the LLE cost summed over
every row subject to ``Y^T Y = I``: ``(Z^T M Z) u = lambda (Z^T Z) u``, an m x
m problem whose two matrices are sums over rows, gathered in one blockwise
pass with memory independent of n. Each row's neighbours are found among a
uniform reference sample (``max_samples`` rows, all rows when the sample
is the data). ``partial_fit`` adds new rows' terms and solves again: the
same statistics as one pass over all rows.

``transform``: barycentric weights of each new row over its ``n_neighbors``
nearest reference rows applied to their coordinates (scikit-learn's rule); a
training row gets back its own coordinates. In landmark mode, the same
formula as the fit, ``z(x)^T Y_L``.

References
----------
Roweis, S. T. & Saul, L. K. (2000). Nonlinear dimensionality reduction by
locally linear embedding. Science 290, 2323-2326.
Vladymyrov, M. & Carreira-Perpinan, M. A. (2013). Locally linear landmarks
for large-scale manifold learning. ECML PKDD 2013, LNCS 8190, 256-271.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import scipy.linalg

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import DEPRECATED, ExtensionEstimator, wants_numpy
from ..blockwise.extension import Extension
from ..blockwise.sampling import SAMPLE_CHUNK_BYTES, select_landmarks
from ..core.drift import empirical_threshold
from ..core.eigen import flip_signs
from ..core.local_linear import VARIANTS, min_neighbors, place_unused
from ..core.sparse_eigen import factored_smallest_eigh, smallest_eigh
from ..core.triangulation import rigid_alignment
from ..graph.barycentric import (
    Barycentric,
    LandmarkFrame,
    cost_matrix,
    factors,
    landmark_statistics,
    modified_eta,
)
from ..graph.knn import knn_graph
from ..graph.neighbors import SklearnSearch
from ..graph.sparse import check_graph_params, check_graph_size, csr_from_lists, resolve_components
from ..io import as_array, from_numpy
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming

#: ``landmarks="auto"``: all rows up to this many (benchmarks/results/lle.md), else ``AUTO_LANDMARKS``.
ALL_ROWS_MAX = 1_000_000
AUTO_LANDMARKS = 2_000
SOLVERS = ("auto", "dense", "lu", "arpack", "lobpcg", "amg")
#: Dense LAPACK on the assembled matrix up to this many rows (``eigen_solver="auto"``).
DENSE_MAX = 2_000
ON_DISCONNECTED = ("warn", "raise")
#: Memory model of the all-rows fit: bytes per row of the sparse LU of I - W (about
#: 130 entries per row in nested-dissection order at a million rows of a 2-D manifold,
#: k = 10, and SuperLU's workspace while factorising), of the factor and graph.
LU_ROW_BYTES = 130 * 24
GRAPH_ROW_BYTES = 48
PIECE_ROWS = 8_192


class BarycentricMap(Extension):
    """Rows placed by barycentric weights over their nearest reference rows: ``y = sum_j w_j Y_j``.

    ``snap``: a row at distance 0 from a reference row gets that row's
    coordinates (training rows reproduce their embedding). The drift score is
    the distance to the nearest reference row.
    """

    def __init__(self, reference: Barycentric, coordinates: np.ndarray, snap: bool) -> None:
        super().__init__(coordinates.shape[1], PIECE_ROWS)
        self.reference, self.coordinates, self.snap = reference, np.asarray(coordinates), bool(snap)

    def score_piece(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ind, dist, w = self.reference.weights(rows)
        Y = np.einsum("bk,bkd->bd", w, self.coordinates[ind])
        if self.snap:
            same = dist[:, 0] == 0
            Y[same] = self.coordinates[ind[same, 0]]
        return Y, dist[:, 0].astype(np.float64)

    def embed_piece(self, rows: np.ndarray) -> np.ndarray:
        return self.score_piece(rows)[0]

    def score_only(self, rows: np.ndarray) -> np.ndarray:
        return self.reference.index.query_block(rows, 1)[1][:, 0].astype(np.float64)


class LocallyLinearEmbedding(SklearnSearch, ExtensionEstimator):
    """Locally linear embedding (standard, modified, Hessian, LTSA) of data of any size.

    Parameters
    ----------
    n_components : int
        ``d``: coordinates of the embedding.
    n_neighbors : int
        ``k``: neighbours reconstructing each row (the row itself excluded).
        At least ``d`` (standard, modified), ``d + 1`` (ltsa) or ``d(d+3)/2 +
        1`` (hessian).
    method : {"standard", "modified", "hessian", "ltsa"}
        The local model (:mod:`bigdr.core.local_linear`); all four run in both modes.
    reg : float > 0
        Regulariser of the local Gram matrices, relative to their trace:
        ``G + reg * trace(G) I`` (scikit-learn's scaling); also the
        modified variant's regulariser.
    landmarks : "auto", None or int
        None: all rows (held in this process, the graph of all rows). int
        ``m``: locally linear landmarks with ``m`` landmarks, every row
        placed from them (memory independent of n). ``"auto"``: all rows
        up to 1,000,000, else 2,000 landmarks.
    max_samples : int
        Landmark mode: the rows among which every row's neighbours are found
        (a uniform sample; all rows if fewer).
    landmark_neighbors : int or None
        Landmark mode: landmarks per row in ``z(x)`` (default ``n_neighbors``).
    eigen_solver : {"auto", "dense", "lu", "arpack", "lobpcg", "amg"}
        All-rows mode. ``lu``: LOBPCG on ``C^T C`` preconditioned by a sparse LU of
        ``I - W`` (standard) or of the assembled ``M`` (the variants)
        (:func:`bigdr.core.sparse_eigen.factored_smallest_eigh`);
        ``arpack``: shift-invert Lanczos on the assembled matrix
        (scikit-learn's); ``lobpcg``/``amg``: :func:`bigdr.blockwise.linalg.smallest_eigh`
        on the assembled matrix. ``auto``: dense up to 2,000 rows, else
        ``lu`` (the measured choice, benchmarks/results/lle.md).
    metric : str
        Distance of the neighbour search (:func:`bigdr.knn_graph`).
    neighbor_method : {"auto", "kdtree", "brute", "faiss", "nndescent"}
        Neighbour search (:func:`bigdr.knn_graph`); ``auto`` picks from the rows and width.
    on_disconnected : {"warn", "raise"}
        A disconnected neighbour graph: each component's embedding is
        independent (the package's policy, :func:`bigdr.graph.sparse.resolve_components`).
    random_state : int
        Seed of the landmark and reference draws, the eigensolver's start and NN-descent.
    tol, max_iter : float, int
        scikit-learn's tolerance and most iterations of ARPACK
        (``eigen_solver="arpack"``, shift-invert Lanczos); the other solvers
        keep their own rules.
    hessian_tol : float
        ``hessian``: a row's weight column summing below this is left unnormalised.
    modified_tol : float
        ``modified``: a reflection vector shorter than this is dropped.
    neighbors_algorithm : {"auto", "brute", "kd_tree", "ball_tree"}
        scikit-learn's name for the neighbour search: ``brute`` and
        ``kd_tree`` are bigdr's ``"brute"`` and ``"kdtree"``, ``ball_tree``
        the k-d tree (the same exact neighbours); ``"auto"`` leaves the choice
        to ``neighbor_method``.
    n_jobs : None or int
        Accepted for scikit-learn's signature; the parallelism is dask's scheduler's.
    reference_size : "deprecated"
        The 0.1 name of ``max_samples``, accepted with a FutureWarning until 0.3.

    Attributes
    ----------
    graph_recall_ : float or None, the fitted graph's :attr:`bigdr.KNNGraph.recall` (None in landmark mode)
    embedding_ : (n, d), when ``X`` is in memory
    eigenvalues_ : (d,) the cost matrix's eigenvalues kept (trivial 0 dropped), ascending
    reconstruction_error_ : float, their sum (scikit-learn's attribute)
    mode_ : {"all-rows", "landmarks"}
    reference_rows_, reference_embedding_ : the rows new rows are placed from and their coordinates
    landmark_statistics_A_, landmark_statistics_B_ : landmark mode, the m x m sums over rows

    References
    ----------
    Roweis & Saul (2000), Science 290; Zhang & Wang (2007), NIPS 19; Donoho &
    Grimes (2003), PNAS 100(10); Zhang & Zha (2004), SIAM J. Sci. Comput.
    26(1); Vladymyrov & Carreira-Perpinan (2013), ECML PKDD.
    """

    _cli_flags = {"method": "variant"}  # --method chooses the method
    _renamed_params = {"reference_size": "max_samples"}

    def __init__(
        self,
        n_components: int = 2,
        n_neighbors: int = 5,
        method: str = "standard",
        reg: float = 1e-3,
        landmarks: Any = "auto",
        max_samples: int = 100_000,
        landmark_neighbors: int | None = None,
        eigen_solver: str = "auto",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "warn",
        random_state: int = 0,
        tol: float = 1e-6,
        max_iter: int = 100,
        hessian_tol: float = 1e-4,
        modified_tol: float = 1e-12,
        neighbors_algorithm: str = "auto",
        n_jobs: int | None = None,
        *,
        reference_size: Any = DEPRECATED,
    ) -> None:
        self.n_components = n_components
        self.tol = tol
        self.max_iter = max_iter
        self.hessian_tol = hessian_tol
        self.modified_tol = modified_tol
        self.neighbors_algorithm = neighbors_algorithm
        self.n_jobs = n_jobs
        self.n_neighbors = n_neighbors
        self.method = method
        self.reg = reg
        self.landmarks = landmarks
        self.max_samples = max_samples
        self.landmark_neighbors = landmark_neighbors
        self.eigen_solver = eigen_solver
        self.metric = metric
        self.neighbor_method = neighbor_method
        self.on_disconnected = on_disconnected
        self.random_state = random_state
        self.reference_size = reference_size

    # -- checks -------------------------------------------------------------------------
    def _variant_tol(self) -> float | None:
        """scikit-learn's tolerance of the local model (models saved before 0.2 lack the parameters)."""
        name = {"hessian": "hessian_tol", "modified": "modified_tol"}.get(self.method)
        return None if name is None else getattr(self, name, None)

    def _check_params(self, n: int) -> str:
        check_int(self.n_components, "n_components")
        check_graph_params(self.n_neighbors, self.metric, self._search(), self.on_disconnected, ON_DISCONNECTED)
        check_graph_size(self.n_neighbors, n)
        for name in ("tol", "hessian_tol", "modified_tol"):
            check_real(getattr(self, name), name, 0)
        check_int(self.max_iter, "max_iter")
        check_choice(self.method, "method", VARIANTS)
        check_real(self.reg, "reg", 0, low_open=True)
        check_choice(self.eigen_solver, "eigen_solver", SOLVERS)
        check_int(self._param("max_samples"), "max_samples", 2)
        if self.landmark_neighbors is not None:
            check_int(self.landmark_neighbors, "landmark_neighbors")
        need = min_neighbors(self.method, self.n_components)
        if self.n_neighbors < need:
            raise ValueError(
                f"method={self.method!r} with n_components={self.n_components} needs n_neighbors >= {need}; "
                f"got {self.n_neighbors}. Raise n_neighbors or lower n_components."
            )
        self.seed_ = resolve_seed(self.random_state)
        lm = self.landmarks
        if isinstance(lm, str):
            if lm != "auto":
                raise ValueError(f"landmarks must be 'auto', None or an int; got {lm!r}.")
            return "all-rows" if n <= ALL_ROWS_MAX else "landmarks"
        if lm is None:
            return "all-rows"
        if isinstance(lm, bool) or not isinstance(lm, (int, np.integer)) or not self.n_components + 1 < lm <= n:
            raise ValueError(
                f"landmarks must be an int above n_components + 1 and at most the number of rows ({n}); got {lm!r}."
            )
        return "landmarks"

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        n, p = Xd.shape
        mode = self._check_params(n)
        k, d = int(self.n_neighbors), int(self.n_components)
        if mode == "all-rows":
            return {
                "rows": Part(2 * n * p * 8, "the rows and their search tree", "landmarks"),
                "graph": Part(n * k * (GRAPH_ROW_BYTES + 16), f"the graph and the factor ({n:,} x {k})", "n_neighbors"),
                "lu": Part(n * LU_ROW_BYTES, "the sparse LU of I - W (the eigensolver's preconditioner)", "landmarks"),
                "eigen": Part(12 * n * (d + 3) * 8, "the eigensolver's blocks", "n_components"),
            }
        m, s = self._sizes(n)
        return {
            "sample": Part(3 * s * p * 8 + s * k * 24, f"the reference sample ({s:,} rows)", "max_samples"),
            "problem": Part(4 * m * m * 8, f"the {m:,} x {m:,} problem (two sums per task)", "landmarks"),
            "pass": streaming(SAMPLE_CHUNK_BYTES, 3, "blocks of the pass over the rows", "pass"),
        }

    def _sizes(self, n: int) -> tuple[int, int]:
        lm = self.landmarks
        m = AUTO_LANDMARKS if isinstance(lm, str) or lm is None else int(lm)
        m = min(m, n)
        return m, max(m, min(int(self._param("max_samples")), n))

    # -- fit ----------------------------------------------------------------------------------
    def _fit(self, X: Any) -> da.Array:
        Xd = as_array(X, name="X")
        n = Xd.shape[0]
        mode = self._check_params(n)
        self._check_memory(Xd)
        self.n_features_in_ = int(Xd.shape[1])
        self.mode_ = mode
        self.n_samples_seen_ = int(n)
        self._ext = None
        self.__dict__.pop("_frame", None)
        self._reset_drift()
        self.graph_recall_: float | None = None  # landmark mode builds no graph: rows query the landmarks
        if mode == "all-rows":
            rows = self._fit_all_rows(Xd)
            if wants_numpy(X):
                self.embedding_ = rows
            return from_numpy(rows, Xd.chunks[0])
        self._fit_landmarks(X, Xd)
        Y = self._extend(X)
        if wants_numpy(X):
            (self.embedding_,) = compute(Y)
        return Y

    def _fit_all_rows(self, Xd: da.Array) -> np.ndarray:
        k, d, method = int(self.n_neighbors), int(self.n_components), self.method
        (ref,) = compute(Xd)
        ref = np.ascontiguousarray(ref, dtype=np.float64)
        n = len(ref)
        if k >= n or d >= n - 1:
            raise ValueError(f"{n} rows are too few for n_neighbors={k} and n_components={d}.")
        graph = knn_graph(ref, k, metric=self.metric, method=self._search(), random_state=self.seed_)
        self.graph_recall_ = graph.recall
        ind, dist = graph.compute()  # the graph's index on all rows is not kept: transform builds its own when asked
        _, _, self.n_graph_components_ = resolve_components(
            csr_from_lists(ind, dist, "union", "connectivity"), self.on_disconnected, hint="n_neighbors",
            allowed=ON_DISCONNECTED, stacklevel=5,
        )  # fmt: skip
        threshold = empirical_threshold(dist[:, 0])
        del dist
        self.eta_ = modified_eta(ref, ind, d) if method == "modified" else None
        C = factors(ref, ind, method, d, float(self.reg), self.eta_, self._variant_tol())
        solver = self.eigen_solver
        if solver == "auto":
            solver = "dense" if n <= DENSE_MAX else "lu"
        used = np.bincount(C.indices, minlength=n) > 0
        if not used.all():  # rows in no index set: see place_unused
            C = C[:, np.flatnonzero(used)]
        m = int(used.sum())
        ones = np.ones(m) / np.sqrt(m)
        if solver == "lu":
            # standard: precondition by I - W itself; the variants: by their own assembled M
            square = C if method == "standard" else cost_matrix(C)
            variant = method != "standard"
            eig = factored_smallest_eigh(C, d, square, ones, random_state=self.seed_, square_is_cost=variant)
            values, vectors = eig.values, eig.vectors
        else:
            name = {"arpack": "shift-invert"}.get(solver, solver)
            eig = smallest_eigh(cost_matrix(C), d + 1, name, self.seed_, known=ones, arpack_tol=float(self.tol),
                                arpack_maxiter=int(self.max_iter))  # fmt: skip
            values, vectors = eig.values[1:], flip_signs(eig.vectors[:, 1:])
        if not used.all():
            full = np.zeros((n, d))
            full[used] = vectors
            vectors = place_unused(ref, ind, full, used, float(self.reg))
        self.eigen_solver_ = solver
        self._set_solution(values, ref, vectors)
        self.drift_threshold_ = threshold
        return vectors

    def _set_solution(self, values: np.ndarray, reference: np.ndarray, coordinates: np.ndarray) -> None:
        self.eigenvalues_ = np.asarray(values, dtype=np.float64)
        self.reconstruction_error_ = float(np.sum(values))
        self.reference_rows_ = reference
        self.reference_embedding_ = coordinates
        self._ext = None

    def _fit_landmarks(self, X: Any, Xd: da.Array) -> None:
        n = Xd.shape[0]
        m, s = self._sizes(n)
        sample, _ = select_landmarks(X, s, "random", self.seed_)
        pick = np.sort(np.random.default_rng([self.seed_, 7]).choice(s, m, replace=False))
        self.sample_rows_ = np.ascontiguousarray(sample, dtype=np.float64)
        self.landmark_rows_ = self.sample_rows_[pick]
        frame = self._landmark_frame()
        self.eta_ = frame.eta
        (stats,) = compute(landmark_statistics(Xd, frame))
        self.landmark_statistics_A_, self.landmark_statistics_B_ = stats.A.toarray(), stats.B.toarray()
        self._solve_landmarks()
        near = frame.landmarks.index.query_block(self.sample_rows_, 2)[1]
        self.drift_threshold_ = empirical_threshold(np.where(near[:, 0] == 0, near[:, 1], near[:, 0]))

    def _landmark_frame(self) -> LandmarkFrame:
        frame = self.__dict__.get("_frame")
        if frame is None:
            k_l = int(self.landmark_neighbors or self.n_neighbors)
            k_l = min(k_l, len(self.landmark_rows_))
            seed = self.seed_
            bary = Barycentric(self.landmark_rows_, k_l, float(self.reg), self.metric, self._search(), seed)
            frame = self._frame = LandmarkFrame(
                self.sample_rows_, bary, int(self.n_neighbors), self.method, int(self.n_components),
                float(self.reg), self.metric, self._search(), seed, self._variant_tol(),
            )  # fmt: skip
        return frame

    def _solve_landmarks(self) -> np.ndarray:
        A, B = self.landmark_statistics_A_, self.landmark_statistics_B_
        d, m = int(self.n_components), len(A)
        # A landmark no row leans on has an empty row in B; a tiny ridge keeps B definite.
        ridge = 1e-10 * float(np.trace(B)) / m
        values, U = scipy.linalg.eigh(
            (A + A.T) / 2, (B + B.T) / 2 + ridge * np.eye(m), subset_by_index=[0, d], check_finite=False
        )
        coordinates = flip_signs(U[:, 1:])
        self._set_solution(values[1:], self.landmark_rows_, coordinates)
        return coordinates

    # -- transform and updates ------------------------------------------------------------------
    def _make_extension(self) -> Extension:
        if self.mode_ == "landmarks":
            return BarycentricMap(self._landmark_frame().landmarks, self.reference_embedding_, snap=False)
        bary = Barycentric(
            self.reference_rows_, int(self.n_neighbors), float(self.reg), self.metric, self._search(), self.seed_
        )
        return BarycentricMap(bary, self.reference_embedding_, snap=True)

    def _drift_rule(self) -> tuple[float, str]:
        return self.drift_threshold_, "nearest-reference distance"

    def partial_fit(self, X: Any, y: Any = None):
        """Learn from new rows (an unfitted model is fitted on them).

        Landmark mode: the new rows' terms join the two m x m sums and the
        small problem is solved again: the statistics equal those of one pass
        over all rows seen. The new solution is aligned to the previous one
        by orthogonal Procrustes on the landmarks, so earlier embeddings stay
        comparable. All-rows mode: the model is fitted again on the reference
        rows and the new ones together (graph, weights and eigenproblem of
        all of them), aligned to the previous coordinates the same way, while
        they number at most 1,000,000; beyond, refit with landmarks.
        """
        if not self.__sklearn_is_fitted__():
            return self.fit(X)
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, type(self).__name__)
        beyond = self.drift_count(Xd)
        rule = self._drift_rule()  # the count is against the model before the update
        if self.mode_ == "landmarks":
            stats, count = compute(landmark_statistics(Xd, self._landmark_frame()), beyond)
            before = self.reference_embedding_
            self.landmark_statistics_A_ = self.landmark_statistics_A_ + stats.A.toarray()
            self.landmark_statistics_B_ = self.landmark_statistics_B_ + stats.B.toarray()
            raw = self._solve_landmarks()
            R, t = rigid_alignment(raw, before)
            self.reference_embedding_ = raw @ R + t
        else:
            total = len(self.reference_rows_) + Xd.shape[0]
            if total > ALL_ROWS_MAX:
                raise ValueError(
                    f"An all-rows model grows to at most {ALL_ROWS_MAX:,} rows ({total:,} after this batch); "
                    f"refit with landmarks (e.g. landmarks={AUTO_LANDMARKS})."
                )
            new, count = compute(Xd, beyond)
            before = self.reference_embedding_
            rows = np.concatenate([self.reference_rows_, np.asarray(new, dtype=np.float64)])
            raw = self._fit_all_rows(from_numpy(rows, (len(rows),)))
            R, t = rigid_alignment(raw[: len(before)], before)
            self.reference_embedding_ = raw @ R + t
        self.record_drift(Xd.shape[0], int(count), update=True, rule=rule)
        self.n_samples_seen_ += int(Xd.shape[0])
        self._ext = None
        self.__dict__.pop("embedding_", None)
        return self

    def summary(self) -> dict[str, Any]:
        return {
            "eigenvalues": self.eigenvalues_.tolist(),
            "mode": self.mode_,
            "method": self.method,
            "reference_rows": len(self.reference_rows_),
        }

    def describe(self) -> str:
        return (
            f"LocallyLinearEmbedding ({self.method}, {self.mode_}, {len(self.reference_rows_)} reference rows): "
            f"reconstruction error {self.reconstruction_error_:.3g}"
        )
