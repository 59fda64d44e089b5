"""Diffusion maps and Laplacian eigenmaps on sparse neighbour kernels.

**Diffusion map** (Coifman & Lafon 2006):
the eigenpairs ``S v_k = lambda_k v_k`` of the symmetric conjugate ``S =
D^-1/2 W_alpha D^-1/2`` give the right eigenvectors ``phi_k = D^-1/2 v_k``
of the Markov matrix ``M = D^-1 W_alpha``; the map at time ``t`` is
``(lambda_2^t phi_2(x), ..., lambda_{d+1}^t phi_{d+1}(x))``, the trivial
``phi_1 = 1`` dropped. Euclidean distance in the full map is the diffusion
distance (:func:`diffusion_distance`).

**Laplacian eigenmaps** (Belkin & Niyogi 2003): the smallest
nontrivial eigenvectors of ``L = D - W`` (``unnormalized``), of ``I -
D^-1/2 W D^-1/2`` (``symmetric``), or of the generalised problem ``L v =
lambda D v``, i.e. of ``I - D^-1 W`` (``random_walk``, scikit-learn's
choice).

Both solve one sparse symmetric eigenproblem (:func:`bigdr.core.eigen.smallest_eigh`:
dense LAPACK for small graphs, LOBPCG with an algebraic-multigrid
preconditioner above) on a reference set: all rows, or ``m`` landmarks
drawn in one pass. New rows, and in landmark mode every row, are embedded
blockwise by the Nyström extension ``phi_k(x) = (1/lambda_k) sum_j M(x, j)
phi_k(j)`` with ``M(x, .)`` the row of the Markov matrix that ``x`` would
have had (:func:`bigdr.graph.affinity.new_row_weights`); for the unnormalised
Laplacian ``v(x) = sum_j w(x, j) v_j / (d(x) - mu)``. A training row gets
back its own coordinates.
"""

from __future__ import annotations

import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from .._random import resolve_seed
from .._validation import check_int, check_n_features, check_real
from ..base import ExtensionEstimator, wants_numpy
from ..blockwise.sampling import SAMPLE_CHUNK_BYTES, keys_of, row_keys, select_landmarks
from ..core.dimension import grown_sample, intrinsic_dimension, warn_if_sparse
from ..core.drift import empirical_threshold
from ..core.eigen import flip_signs, smallest_eigh
from ..core.triangulation import rigid_alignment
from ..exceptions import DisconnectedGraphWarning
from ..graph.affinity import KERNELS, affinity, auto_epsilon, check_alpha
from ..graph.incremental import reservoir, update_knn
from ..graph.knn import knn_graph
from ..graph.neighbors import NeighborIndex, check_method, check_metric
from ..graph.operators import normalise, symmetric_operator
from ..graph.sparse import check_policy, resolve_components
from ..io import as_array, from_numpy
from ..runtime.compute import compute
from ..runtime.memory import MemoryEstimate, Part, check_memory, streaming
from .nystrom import EXTEND_ROWS, NystromExtension, ratio_block
from .spectral_partitioned import fit_partitioned

#: ``landmarks="auto"``: all rows up to this many, else ``AUTO_LANDMARKS`` landmarks.
ALL_ROWS_MAX = 1_500_000
AUTO_LANDMARKS = 100_000
#: ``landmarks="auto"`` grows the landmark set when the manifold needs more
#: rows (:func:`bigdr.core.dimension.grown_sample`), up to this many.
LANDMARKS_MAX = 1_000_000
#: Memory model (calibrated by benchmarks/bench_memory.py): bytes per kNN edge at
#: the peak (the graph, the kernel and its symmetrised, normalised copies, the
#: solver's preconditioner), copies of the graph rows, and n x (d + 1) blocks
#: held by the eigensolver.
EDGE_BYTES = 80
ROW_COPIES = 3
EIGEN_COPIES = 12
#: Kept reference rows over which an update's Procrustes alignment is fitted.
ALIGN_ROWS = 20_000
#: What the spectral methods can do with a disconnected graph (:func:`bigdr.graph.sparse.resolve_components`).
ON_DISCONNECTED = ("warn", "raise")


class _SpectralBase(ExtensionEstimator):
    """Shared fit and transform of the diffusion map and Laplacian eigenmaps."""

    _abstract = True

    # Set by the subclasses.
    _kernel: str
    _self_loops: bool
    _kind: str

    def _alpha(self) -> float:
        return 0.0

    def _scale(self, mu: np.ndarray) -> np.ndarray:
        return np.ones_like(mu)

    def _check_common(self) -> None:
        check_int(self.n_components, "n_components")
        check_int(self.n_neighbors, "n_neighbors")
        if not (isinstance(self.epsilon, str) and self.epsilon == "auto"):
            check_real(self.epsilon, "epsilon ('auto' or a number)", 0, low_open=True)
        check_policy(self.on_disconnected, ON_DISCONNECTED)
        check_method(self.neighbor_method)
        check_metric(self.metric, self.neighbor_method)
        self.seed_ = resolve_seed(self.random_state)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False, n_ref: int | None = None) -> dict[str, Part]:
        n, p = Xd.shape
        if n_ref is None:
            lm = self.landmarks
            if isinstance(lm, str):
                lm = None if n <= ALL_ROWS_MAX else AUTO_LANDMARKS
            n_ref = n if lm is None else min(int(lm), n)
        k, d = int(self.n_neighbors), int(self.n_components)
        parts = {
            "rows": Part(ROW_COPIES * n_ref * p * 8, "the graph's rows and their search tree", "landmarks"),
            "graph": Part(EDGE_BYTES * n_ref * k, f"the kernel graph ({n_ref:,} rows x {k})", "n_neighbors"),
            "eigen": Part(EIGEN_COPIES * n_ref * (d + 1) * 8, "the eigensolver's blocks", "n_components"),
        }
        if n_ref < n:
            parts["sample"] = streaming(SAMPLE_CHUNK_BYTES, 3, "blocks of the landmark pass", "sample")
            parts["place"] = streaming(EXTEND_ROWS * 4 * k * 8 * 8, 1, "rows being placed", "place")
        return parts

    def _knn(self, ref: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        ind, dist = knn_graph(
            ref, k, metric=self.metric, method=self.neighbor_method, random_state=self.seed_
        ).compute()
        return ind, dist.astype(np.float64)

    def _reference(self, X: Any, Xd: da.Array, size: int | None = None) -> tuple[np.ndarray, str]:
        n = Xd.shape[0]
        lm = self.landmarks if size is None else size
        if isinstance(lm, str):
            if lm != "auto":
                raise ValueError(f"landmarks must be 'auto', None or an int; got {lm!r}.")
            lm = None if n <= ALL_ROWS_MAX else AUTO_LANDMARKS
        if lm is not None and (isinstance(lm, bool) or not isinstance(lm, (int, np.integer)) or not 2 <= lm <= n):
            raise ValueError(f"landmarks must be between 2 and the number of rows ({n}); got {lm!r}.")
        if lm is None or lm >= n:
            (ref,) = compute(Xd)
            self.reference_keys_ = row_keys(0, n, self.seed_)
            return np.ascontiguousarray(ref), "all-rows"
        # From X itself: for a store, the sampling pass then reads its own (smaller) chunks.
        rows, idx = select_landmarks(X, int(lm), "random", self.seed_)
        self.reference_keys_ = keys_of(idx, self.seed_)
        return np.ascontiguousarray(rows), "landmarks"

    def _fit(self, X: Any) -> da.Array:
        if self.partitions is not None:
            return fit_partitioned(self, X)
        self._check_common()
        alpha = self._alpha()
        Xd = as_array(X, name="X")
        self._check_memory(Xd)
        ref, mode = self._reference(X, Xd)
        n_ref, d = len(ref), self.n_components
        k = self.n_neighbors
        if k >= n_ref:
            raise ValueError(f"n_neighbors={k} must be less than the {n_ref} rows of the graph.")
        if d >= n_ref:
            raise ValueError(
                f"n_components={d} must be less than the number of graph rows ({n_ref}): the first "
                f"eigenvector is the trivial one."
            )
        ind, dist = self._knn(ref, k)
        self.intrinsic_dimension_ = intrinsic_dimension(dist)
        if mode == "landmarks":
            if isinstance(self.landmarks, str):
                size = grown_sample(self.intrinsic_dimension_, k, n_ref, Xd.shape[0], LANDMARKS_MAX)
                if size != n_ref:  # more landmarks than the default: the manifold has more dimensions
                    check_memory(MemoryEstimate(type(self).__name__, self._memory_parts(Xd, n_ref=size)))
                    ref, mode = self._reference(X, Xd, size)
                    n_ref = len(ref)
                    ind, dist = self._knn(ref, k)
            if n_ref < Xd.shape[0]:
                warn_if_sparse(self.intrinsic_dimension_, k, n_ref, f"{n_ref} landmarks", "landmarks", 4)
        eps = auto_epsilon(dist) if isinstance(self.epsilon, str) else float(self.epsilon)
        self.n_neighbors_, self.alpha_, self.kernel_, self.operator_ = k, alpha, self._kernel, self._kind
        self.neighbor_method_, self.metric_ = self.neighbor_method, self.metric
        self.epsilon_ = eps
        reference_embedding = self._solve(ind, dist)
        self.mode_ = mode
        self.n_features_in_ = int(Xd.shape[1])
        self.reference_rows_ = ref
        self.n_samples_seen_ = int(Xd.shape[0])
        lm = self.landmarks
        self.reference_cap_ = n_ref if mode == "landmarks" else (None if lm is None else max(ALL_ROWS_MAX, n_ref))
        self.rotation_, self.offset_ = np.eye(d), np.zeros(d)
        self._reset_drift()
        self.drift_threshold_ = empirical_threshold(dist[:, 0])
        self._ext = None
        if mode == "all-rows":
            if wants_numpy(X):
                self.embedding_ = reference_embedding
            return from_numpy(reference_embedding, Xd.chunks[0])
        Y = self._extend(X)
        if wants_numpy(X):
            (self.embedding_,) = compute(Y)
        return Y

    def _solve(self, ind: np.ndarray, dist: np.ndarray, warm: np.ndarray | None = None) -> np.ndarray:
        """Kernel, operator and eigenpairs of the reference graph (fitted attributes set); its embedding.

        ``warm``: the previous eigenvectors (``phi``, n_ref x d) as LOBPCG's start (``partial_fit``).
        """
        d = self.n_components
        aff = affinity(ind, dist, self.kernel_, self.epsilon_, self._self_loops)
        _, _, self.n_graph_components_ = resolve_components(
            aff.W, self.on_disconnected, hint="n_neighbors (or epsilon)", allowed=ON_DISCONNECTED, stacklevel=5
        )
        op = symmetric_operator(aff.W, self.operator_, self.alpha_)
        L, q = op.L, op.q
        initial = None
        if warm is not None:
            initial = np.column_stack([np.ones(len(warm)), warm * (np.sqrt(op.d)[:, None] if op.d is not None else 1)])
        eig = smallest_eigh(L, d + 1, self.eigen_solver, self.seed_, op.null_vector, initial=initial)
        mu, U = eig.values, eig.vectors
        scale_l = float(abs(L).sum(axis=1).max())
        self.n_unit_eigenvalues_ = int(np.sum(mu < 1e-9 * scale_l))
        if self.n_unit_eigenvalues_ > 1:
            warnings.warn(
                f"{self.n_unit_eigenvalues_} eigenvalues of the Markov matrix equal 1 (the kernel graph "
                f"is disconnected); the leading coordinates indicate components, not geometry.",
                DisconnectedGraphWarning,
                stacklevel=4,
            )
        phi = U if op.d is None else U / np.sqrt(op.d)[:, None]
        phi = flip_signs(phi[:, 1:])
        mu = mu[1:]
        scale = self._scale(mu)
        d_root = np.sqrt(op.d) if op.d is not None else np.ones(len(ind))
        # transform depends on fitted values only, never on parameters changed after fit
        self.scale_ = scale
        self.eigenvectors_ = phi
        self.laplacian_eigenvalues_ = mu
        self.neighbor_radius_ = aff.radius
        self.degrees_ = q
        self.max_degree_ = aff.max_degree
        self.graph_indices_, self.graph_distances_ = ind, dist.astype(np.float32)
        W = aff.W.tocsr()
        W.sort_indices()
        self.affinity_data_, self.affinity_indices_, self.affinity_indptr_ = W.data, W.indices, W.indptr
        self._ext = None
        return (phi * d_root[:, None] if self.operator_ == "symmetric" else phi) * scale

    def partial_fit(self, X: Any, y: Any = None):
        """Learn from new rows without refitting (an unfitted model is fitted on them).

        The batch's drift (distance to the nearest reference row) is measured
        first. Rows the reservoir keeps join the reference set (the
        ``reference_cap_`` rows of smallest key among all rows seen, the
        sample ``fit`` draws; :func:`bigdr.graph.incremental.reservoir`), the
        neighbour lists change locally (:func:`bigdr.graph.incremental.update_knn`),
        ``epsilon="auto"`` is re-estimated on the new lists (a given epsilon is
        kept), the kernel is formed again, and the eigenproblem is
        solved again with LOBPCG started from the previous eigenvectors
        (entering rows start at the mean of their kept neighbours). The new
        embedding is aligned to the previous one by orthogonal Procrustes
        (rotation or reflection and shift, ``rotation_`` and ``offset_``)
        fitted on up to 20,000 kept reference rows.
        """
        if not self.__sklearn_is_fitted__():
            return self.fit(X)
        if not hasattr(self, "graph_indices_") or self.mode_ == "partitioned":
            raise ValueError("This model has no graph to update (fitted with partitions, or by bigdr < 0.2); refit it.")
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, type(self).__name__)
        n_b, start = Xd.shape[0], self.n_samples_seen_
        keys = row_keys(start, start + n_b, self.seed_)
        keep, enter = reservoir(
            self.reference_keys_, np.zeros(len(self.reference_keys_), bool), keys, self.reference_cap_
        )
        beyond = self.drift_count(Xd)
        take = np.flatnonzero(enter)
        count, entering = compute(beyond, Xd[take])
        rule = self._drift_rule()
        kept = np.flatnonzero(keep)
        sample = np.random.default_rng([self.seed_, 4]).choice(len(kept), min(ALIGN_ROWS, len(kept)), replace=False)
        before = self._extension().embed_block(self.reference_rows_[kept[sample]])
        upd = update_knn(self.reference_rows_, self.graph_indices_, self.graph_distances_, keep,
                         np.asarray(entering), self.metric_, self.neighbor_method_)  # fmt: skip
        warm = np.zeros((len(upd.rows), self.n_components))
        warm[: len(kept)] = self.eigenvectors_[kept]
        new = upd.indices[len(kept) :]
        known = new < len(kept)
        warm[len(kept) :] = (warm[new] * known[..., None]).sum(1) / np.maximum(known.sum(1), 1)[:, None]
        state = dict(vars(self))
        dist = upd.distances.astype(np.float64)
        try:
            if isinstance(self.epsilon, str):  # "auto": the fit's rule on the new reference set
                self.epsilon_ = auto_epsilon(dist)
            raw = self._solve(upd.indices, dist, warm)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)  # a refused update leaves the model as it was
            raise
        self.rotation_, self.offset_ = rigid_alignment(raw[sample], before)
        self.reference_rows_, self.reference_keys_ = upd.rows, np.concatenate([self.reference_keys_[keep], keys[take]])
        self.drift_threshold_ = empirical_threshold(upd.distances[:, 0])
        self.intrinsic_dimension_ = intrinsic_dimension(upd.distances)
        self.record_drift(n_b, int(count), update=True, rule=rule)
        self.n_samples_seen_ = start + n_b
        self.mode_ = "landmarks" if len(upd.rows) < self.n_samples_seen_ else "all-rows"
        self.__dict__.pop("embedding_", None)
        return self

    def _drift_rule(self) -> tuple[float, str]:
        return self.drift_threshold_, "nearest-reference distance"

    def _fitted(self, name: str, fallback: Any) -> Any:
        # Models saved by bigdr 0.2 lack the fitted copies; their parameters are the fitted ones.
        value = self.__dict__.get(name)
        return fallback() if value is None else value

    def _make_extension(self) -> NystromExtension:
        metric = self._fitted("metric_", lambda: self.metric)
        index = NeighborIndex(metric, self._fitted("neighbor_method_", lambda: self.neighbor_method), self.seed_)
        index.fit(self.reference_rows_)
        k_query = min(len(self.reference_rows_), int(self.max_degree_) + 2)
        return NystromExtension(
            index,
            self._kernel_matrix(),
            int(self._fitted("n_neighbors_", lambda: self.n_neighbors)),
            k_query,
            self.neighbor_radius_,
            self.degrees_,
            self._fitted("kernel_", lambda: self._kernel),
            self.epsilon_,
            self._self_loops,
            float(self._fitted("alpha_", self._alpha)),
            self._fitted("operator_", lambda: self._kind),
            self.eigenvectors_,
            self._fitted("extension_eigenvalues_", lambda: self.laplacian_eigenvalues_),
            self._fitted("scale_", lambda: self._scale(self.laplacian_eigenvalues_)),
            self.reference_rows_,
            metric,
            self.__dict__.get("rotation_"),
            self.__dict__.get("offset_"),
        )

    def distance_ratio(self, X: Any) -> np.ndarray | da.Array:
        """How far each row lies outside the fitted data, blockwise.

        The distance from a row to its nearest reference row divided by that
        reference row's distance to its ``n_neighbors``-th neighbour: about 1
        or less inside the data, large outside. ``transform`` warns
        (:class:`~bigdr.exceptions.ExtrapolationWarning`) for rows above 3.
        """
        self._check_fitted()
        ext = self._extension()
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, type(self).__name__)
        if len(Xd.chunks[1]) != 1:
            Xd = Xd.rechunk({1: -1})
        key = dask.delayed(ext, name=ext.key, traverse=False)
        ratio = da.map_blocks(ratio_block, Xd, key, drop_axis=1, dtype=np.float64, meta=np.empty((0,)))
        return compute(ratio)[0] if wants_numpy(X) else ratio

    def _kernel_matrix(self) -> sp.csr_matrix:
        """The reference rows' affinity (kept as CSR arrays so that models persist without pickle)."""
        n = len(self.reference_rows_)
        return sp.csr_matrix((self.affinity_data_, self.affinity_indices_, self.affinity_indptr_), shape=(n, n))

    def _graph_rows(self) -> int:
        return self.n_samples_seen_ if self.mode_ == "partitioned" else len(self.reference_rows_)

    def summary(self) -> dict[str, Any]:
        return {
            "eigenvalues": self.eigenvalues_.tolist(),
            "epsilon": self.epsilon_,
            "mode": self.mode_,
            "graph_rows": self._graph_rows(),
        }

    def describe(self) -> str:
        return (
            f"{type(self).__name__} ({self.mode_}, graph of {self._graph_rows()} rows): "
            f"eigenvalues {[round(float(v), 6) for v in self.eigenvalues_]}"
        )


class DiffusionMap(_SpectralBase):
    """Diffusion map on a kNN-truncated Gaussian kernel, exact or by landmarks.

    Parameters
    ----------
    n_components : int
        ``d``: coordinates kept after dropping the trivial one.
    n_neighbors : int
        Other rows per row in the kernel graph (union-symmetrised).
    epsilon : "auto" or float
        Kernel scale in ``exp(-|x - y|^2 / (2 epsilon^2))``.
        ``"auto"``: half the median distance to the ``n_neighbors``-th
        neighbour (the kernel is ``e^-2`` there).
    alpha : float in [0, 1]
        Coifman–Lafon normalisation: 0 graph Laplacian, 0.5 Fokker–Planck,
        1 Laplace–Beltrami (default: the geometry without the sampling density).
    t : float >= 0
        Diffusion time: coordinates are ``lambda_k^t phi_k``.
    landmarks : "auto", None or int
        None: all rows form the graph (held in this process). int ``m``: the
        map is fitted on ``m`` rows drawn uniformly in one pass and every row
        is embedded by the Nyström extension, blockwise (memory independent
        of n). ``"auto"``: all rows up to 1,500,000, else 100,000 landmarks,
        or more (up to 1,000,000) when the manifold's estimated dimension
        asks for more (:func:`bigdr.core.dimension.rows_needed`). Fewer
        landmarks than that rule asks for warn (``SparseGraphWarning``).
    eigen_solver : {"auto", "dense", "arpack", "lobpcg", "amg"}
        See :func:`bigdr.blockwise.linalg.smallest_eigh`; ``auto``: dense up to 2000
        graph rows, else LOBPCG with an AMG preconditioner.
    metric, neighbor_method : neighbour search (:func:`bigdr.knn_graph`).
    on_disconnected : {"warn", "raise"}
    random_state : int
    partitions : None, int or "auto"
        None: the graph is built in this process. An int or ``"auto"``: every
        row is embedded from the graph of all rows, built by cells on the
        workers (:func:`bigdr.knn_graph`), with LOBPCG on the operator held
        in row blocks (:mod:`bigdr.manifold.spectral_partitioned`).

    Attributes
    ----------
    eigenvalues_ : (n_components,) eigenvalues ``lambda_k`` of M, descending (``<= 1``)
    eigenvectors_ : (n_ref, n_components) ``phi_k`` on the reference rows
    embedding_ : (n, n_components), when ``X`` is in memory
    epsilon_ : float, the scale used
    n_unit_eigenvalues_ : int, how many eigenvalues equal 1 (components of the graph)
    mode_ : {"all-rows", "landmarks", "partitioned"}
    landmark_residual_, all_rows_epsilon_ : with ``partitions`` (:mod:`bigdr.manifold.spectral_partitioned`)
    intrinsic_dimension_ : float, Levina-Bickel estimate of the manifold's dimension from the graph
    """

    _kernel = "gaussian"
    _self_loops = True
    _kind = "markov"

    def __init__(
        self,
        n_components: int = 2,
        n_neighbors: int = 15,
        epsilon: Any = "auto",
        alpha: float = 1.0,
        t: float = 1,
        landmarks: Any = "auto",
        eigen_solver: str = "auto",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "warn",
        random_state: int = 0,
        partitions: Any = None,
    ) -> None:
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.epsilon = epsilon
        self.alpha = alpha
        self.t = t
        self.landmarks = landmarks
        self.eigen_solver = eigen_solver
        self.metric = metric
        self.neighbor_method = neighbor_method
        self.on_disconnected = on_disconnected
        self.random_state = random_state
        self.partitions = partitions

    def _alpha(self) -> float:
        return check_alpha(self.alpha)

    def _scale(self, mu: np.ndarray) -> np.ndarray:
        t = self.t
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not t >= 0:
            raise ValueError(f"t must be a number >= 0; got {t!r}.")
        lam = 1.0 - mu
        if float(t).is_integer():
            return lam ** int(t)
        return np.sign(lam) * np.abs(lam) ** t  # a fractional power of a negative eigenvalue: keep its sign

    @property
    def eigenvalues_(self) -> np.ndarray:
        self._check_fitted()
        return 1.0 - self.laplacian_eigenvalues_


class SpectralEmbedding(_SpectralBase):
    """Laplacian eigenmaps (Belkin & Niyogi 2003) with a Nyström ``transform``.

    Parameters
    ----------
    n_components : int
    affinity : {"nearest_neighbors", "gaussian"}
        ``nearest_neighbors``: 0/1 kNN adjacency symmetrised as ``(A + A^T)/2``
        (scikit-learn's). ``gaussian``: the kNN-truncated heat kernel.
    n_neighbors : int
        Other rows per row. scikit-learn's ``n_neighbors`` counts the row
        itself: its ``n_neighbors=k`` is this ``k - 1``.
    laplacian : {"random_walk", "symmetric", "unnormalized"}
        ``random_walk``: the generalised problem ``L v = lambda D v``
        (scikit-learn's embedding). ``symmetric``: eigenvectors of ``I -
        D^-1/2 W D^-1/2``. ``unnormalized``: of ``D - W``.
    epsilon : "auto" or float
        Kernel scale of the ``gaussian`` affinity.
    landmarks, eigen_solver, metric, neighbor_method, on_disconnected, random_state, partitions
        As in :class:`DiffusionMap`.

    Attributes
    ----------
    eigenvalues_ : (n_components,) the Laplacian's eigenvalues, ascending (trivial 0 dropped)
    embedding_, eigenvectors_, epsilon_, mode_, intrinsic_dimension_ : as in :class:`DiffusionMap`
    """

    _self_loops = False

    def __init__(
        self,
        n_components: int = 2,
        affinity: str = "nearest_neighbors",
        n_neighbors: int = 10,
        laplacian: str = "random_walk",
        epsilon: Any = "auto",
        landmarks: Any = "auto",
        eigen_solver: str = "auto",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "warn",
        random_state: int = 0,
        partitions: Any = None,
    ) -> None:
        self.n_components = n_components
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.laplacian = laplacian
        self.epsilon = epsilon
        self.landmarks = landmarks
        self.eigen_solver = eigen_solver
        self.metric = metric
        self.neighbor_method = neighbor_method
        self.on_disconnected = on_disconnected
        self.random_state = random_state
        self.partitions = partitions

    @property
    def _kernel(self) -> str:  # type: ignore[override]  # a class attribute in DiffusionMap
        if self.affinity == "nearest_neighbors":
            return "connectivity"
        if self.affinity not in KERNELS:
            raise ValueError(f"affinity must be 'nearest_neighbors' or 'gaussian'; got {self.affinity!r}.")
        return self.affinity

    @property
    def _kind(self) -> str:  # type: ignore[override]  # a class attribute in DiffusionMap
        kinds = {"random_walk": "markov", "symmetric": "symmetric", "unnormalized": "unnormalized"}
        if self.laplacian not in kinds:
            raise ValueError(f"laplacian must be 'random_walk', 'symmetric' or 'unnormalized'; got {self.laplacian!r}.")
        return kinds[self.laplacian]

    @property
    def eigenvalues_(self) -> np.ndarray:
        self._check_fitted()
        return self.laplacian_eigenvalues_


def diffusion_distance(
    X: Any,
    t: float = 1,
    n_neighbors: int = 15,
    epsilon: Any = "auto",
    alpha: float = 1.0,
    metric: str = "euclidean",
    max_samples: int = 5000,
) -> np.ndarray:
    """Diffusion distances of a small set by their definition (Coifman & Lafon 2006).

    ``D_t(i, j)^2 = sum_l (M^t[i, l] - M^t[j, l])^2 / deg(l)`` with ``M`` and
    ``deg`` from the same kernel graph as :class:`DiffusionMap` (integer
    ``t``). Equal to the Euclidean distances of the full diffusion map.
    """
    Xd = as_array(X, name="X")
    n = Xd.shape[0]
    if n > max_samples:
        raise ValueError(f"diffusion_distance forms n x n matrices; {n} rows is more than max_samples={max_samples}.")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
        raise ValueError(f"t must be a non-negative int here (a matrix power); got {t!r}.")
    alpha = check_alpha(alpha)
    (data,) = compute(Xd)
    ind, dist = knn_graph(data, n_neighbors, metric=metric).compute()
    dist = dist.astype(np.float64)
    eps = auto_epsilon(dist) if isinstance(epsilon, str) else float(epsilon)
    norm = normalise(affinity(ind, dist, "gaussian", eps, True).W, alpha)
    S = norm.S.toarray()
    sd = np.sqrt(norm.d)
    Mt = np.linalg.matrix_power(S, t) * (sd[None, :] / sd[:, None])  # M^t = D^-1/2 S^t D^1/2
    scaled = Mt / sd[None, :]
    sq = np.einsum("ij,ij->i", scaled, scaled)
    D2 = sq[:, None] + sq[None, :] - 2.0 * scaled @ scaled.T
    return np.sqrt(np.maximum(D2, 0.0))
