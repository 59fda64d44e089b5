"""The spectral methods' shared machinery: a neighbour kernel, one sparse eigenproblem, the Nystrom extension.

:class:`~bigdr.manifold.diffusion_map.DiffusionMap` and
:class:`~bigdr.manifold.spectral_embedding.SpectralEmbedding` differ only in
the operator they solve and the scaling of its eigenvectors; everything else
is here. Both solve one sparse symmetric eigenproblem
(:func:`bigdr.core.sparse_eigen.smallest_eigh`: dense LAPACK for small graphs,
LOBPCG with an algebraic-multigrid preconditioner above) on a reference set:
all rows, or ``m`` landmarks drawn in one pass, or every row from the graph
of all rows built on the workers (:mod:`~bigdr.manifold.spectral_partitioned`).
New rows, and in landmark mode every row, are embedded blockwise by the
Nyström extension ``phi_k(x) = (1/lambda_k) sum_j M(x, j) phi_k(j)`` with
``M(x, .)`` the row of the Markov matrix that ``x`` would have had
(:func:`bigdr.graph.affinity.new_row_weights`, :mod:`~bigdr.manifold.nystrom`);
for the unnormalised Laplacian ``v(x) = sum_j w(x, j) v_j / (d(x) - mu)``. A
training row gets back its own coordinates.
"""

from __future__ import annotations

import warnings
from typing import Any

import dask.array as da
import numpy as np
import scipy.sparse as sp

from .._random import resolve_seed
from .._validation import check_int, check_n_features, check_real
from ..base import ExtensionEstimator, wants_numpy
from ..blockwise.sampling import SAMPLE_CHUNK_BYTES, keys_of, row_keys, select_landmarks
from ..core.csr_rows import max_abs_row_sum
from ..core.dimension import grown_sample, intrinsic_dimension
from ..core.drift import empirical_threshold
from ..core.eigen import flip_signs
from ..core.sparse_eigen import graph_solver, smallest_eigh
from ..core.triangulation import alignment_rows, rigid_alignment
from ..exceptions import DisconnectedGraphWarning
from ..graph.affinity import affinity, auto_epsilon
from ..graph.incremental import reservoir, update_knn
from ..graph.knn import knn_graph
from ..graph.neighbors import NeighborIndex
from ..graph.operators import NEGLIGIBLE_COUPLING, coupling_graph, symmetric_operator
from ..graph.sparse import check_graph_params, check_graph_size, connected_components, resolve_components
from ..io import as_array, from_numpy, rows_in_memory
from ..runtime.compute import compute, driver_blas, model_key
from ..runtime.memory import Part, streaming
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
#: What the spectral methods can do with a disconnected graph (:func:`bigdr.graph.sparse.resolve_components`).
ON_DISCONNECTED = ("warn", "raise")


class _SpectralBase(ExtensionEstimator):
    """Shared fit and transform of the diffusion map and Laplacian eigenmaps."""

    # Set by the subclasses.
    _kernel: str
    _self_loops: bool
    _kind: str
    #: What to change when the graph the eigensolver sees is disconnected (:func:`coupling_graph`).
    _disconnected_hint = (
        f"n_neighbors or epsilon (kernel weights under {NEGLIGIBLE_COUPLING:g} of the largest degree join nothing)"
    )

    def _alpha(self) -> float:
        return 0.0

    def _epsilon(self, distances: np.ndarray) -> float:
        """The Gaussian kernel's scale: ``epsilon``, or the ``"auto"`` rule on these neighbour distances."""
        return auto_epsilon(distances) if isinstance(self.epsilon, str) else float(self.epsilon)

    def _eigen_tol(self) -> dict[str, Any]:
        """Keyword arguments for the eigensolver's tolerance (none: its default)."""
        return {}

    def _scale(self, mu: np.ndarray) -> np.ndarray:
        return np.ones_like(mu)

    def _k(self, n_rows: int) -> int:
        """Neighbours per row; None is scikit-learn's ``max(n / 10, 1)``, which counts the row itself."""
        return max(int(n_rows / 10) - 1, 1) if self.n_neighbors is None else int(self.n_neighbors)

    def _check_common(self) -> None:
        check_int(self.n_components, "n_components")
        if not (isinstance(self.epsilon, str) and self.epsilon == "auto"):
            check_real(self.epsilon, "epsilon ('auto' or a number)", 0, low_open=True)
        check_graph_params(
            1 if self.n_neighbors is None else self.n_neighbors,
            self.metric,
            self.neighbor_method,
            self.on_disconnected,
            ON_DISCONNECTED,
        )
        self.seed_ = resolve_seed(self.random_state)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False, n_ref: int | None = None) -> dict[str, Part]:
        n, p = Xd.shape
        check_graph_size(self._k(n), n)
        if n_ref is None:
            lm = self.landmarks
            if isinstance(lm, str):
                lm = None if n <= ALL_ROWS_MAX else AUTO_LANDMARKS
            n_ref = n if lm is None else min(int(lm), n)
        k, d = self._k(n_ref), int(self.n_components)
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
        graph = knn_graph(ref, k, metric=self.metric, method=self.neighbor_method, random_state=self.seed_)
        self.graph_recall_ = graph.recall
        ind, dist = graph.compute()
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
            self.reference_keys_ = row_keys(0, n, self.seed_)
            return rows_in_memory(Xd), "all-rows"
        # From X itself: for a store, the sampling pass then reads its own (smaller) chunks.
        rows, idx = select_landmarks(X, int(lm), "random", self.seed_)
        self.reference_keys_ = keys_of(idx, self.seed_)
        return np.ascontiguousarray(rows), "landmarks"

    def _fit(self, X: Any) -> da.Array:
        if self.partitions is not None:
            fitted, every_row = fit_partitioned(self, X)
            for name, value in fitted.items():
                setattr(self, name, value)
            self._ext = None  # rebuilt from the landmark model on first use
            if wants_numpy(X):
                (self.embedding_,) = compute(every_row)
            return every_row
        self._check_common()
        alpha = self._alpha()
        Xd = as_array(X, name="X")
        self._check_memory(Xd)
        ref, mode = self._reference(X, Xd)
        n_ref, d = len(ref), self.n_components
        k = self._k(n_ref)
        check_graph_size(k, n_ref, "rows of the graph")
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
                    self._check_memory(Xd, n_ref=size)
                    ref, mode = self._reference(X, Xd, size)
                    n_ref = len(ref)
                    ind, dist = self._knn(ref, k)
        eps = self._epsilon(dist)
        self.n_neighbors_, self.alpha_, self.kernel_, self.operator_ = k, alpha, self._kernel, self._kind
        self.neighbor_method_, self.metric_ = self.neighbor_method, self.metric
        self.epsilon_ = eps
        reference_embedding = self.reference_embedding_ = self._solve(ind, dist)
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
        aff = affinity(ind, dist, self.kernel_, self.epsilon_, self._self_loops)
        embedding = self._embed_graph(aff.W, warm, self.n_neighbors_, self.intrinsic_dimension_)
        self.neighbor_radius_ = aff.radius
        self.local_scales_ = aff.scales
        self.max_degree_ = aff.max_degree
        self.graph_indices_, self.graph_distances_ = ind, dist.astype(np.float32)
        W = aff.W.tocsr()
        W.sort_indices()
        self.affinity_data_, self.affinity_indices_, self.affinity_indptr_ = W.data, W.indices, W.indptr
        self._ext = None
        return embedding

    def _embed_graph(self, W: Any, warm: np.ndarray | None, degree: float, dimension: float) -> np.ndarray:
        """Operator and eigenpairs of the affinity ``W`` (fitted attributes set); the rows' embedding.

        ``degree`` and ``dimension`` (neighbours per row, intrinsic dimension) choose the ``"auto"`` solver.
        """
        d = self.n_components
        op = symmetric_operator(W, self.operator_, self.alpha_)
        L, q = op.L, op.q
        # Components as the eigensolver sees them: rows coupled only by negligible kernel weights count apart
        coupled = coupling_graph(L)
        components = connected_components(coupled, symmetric=True)
        found, labels, _ = components
        self.n_graph_components_ = found
        if found > 1:
            resolve_components(coupled, self.on_disconnected, hint=self._disconnected_hint, allowed=ON_DISCONNECTED,
                               stacklevel=6, components=components)  # fmt: skip
        del coupled  # a copy of L's pattern when it has negligible entries (133 MB at 1M cells): not through the solve
        initial = None
        if warm is not None:
            initial = np.column_stack([np.ones(len(warm)), warm * (np.sqrt(op.d)[:, None] if op.d is not None else 1)])
        solver = "auto" if self.eigen_solver is None else self.eigen_solver  # None: scikit-learn's "auto"
        if solver == "auto" and warm is None:  # a warm start is LOBPCG's (partial_fit)
            solver = graph_solver(L.shape[0], int(degree), dimension)
        self.eigen_solver_ = solver
        with driver_blas():
            eig = smallest_eigh(
                L, d + 1, solver, self.seed_, op.null_vector, initial=initial, components=labels if found > 1 else None,
                **self._eigen_tol(),
            )  # fmt: skip
        mu, U = eig.values, eig.vectors
        scale_l = max_abs_row_sum(L)
        self.n_unit_eigenvalues_ = int(np.sum(mu < 1e-9 * scale_l))
        if self.n_unit_eigenvalues_ > 1:
            warnings.warn(
                f"{self.n_unit_eigenvalues_} eigenvalues of the Markov matrix equal 1 (the kernel graph "
                f"is disconnected); the leading coordinates indicate components, not geometry.",
                DisconnectedGraphWarning,
                stacklevel=5,
            )
        phi = U if op.d is None else U / np.sqrt(op.d)[:, None]
        phi = flip_signs(phi[:, 1:])
        mu = mu[1:]
        scale = self._scale(mu)
        d_root = np.sqrt(op.d) if op.d is not None else np.ones(L.shape[0])
        # transform depends on fitted values only, never on parameters changed after fit
        self.scale_ = scale
        self.eigenvectors_ = phi
        self.laplacian_eigenvalues_ = mu
        self.degrees_ = q
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
            raise ValueError(
                "This model has no graph to update (fitted with partitions or a whole affinity, or by bigdr < 0.2); "
                "refit it."
            )
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
        sample = alignment_rows(len(kept), [self.seed_, 4])
        fitted = self.__dict__.get("reference_embedding_")  # absent from models saved by bigdr < 0.3
        if fitted is None:
            before = self._extension().embed_block(self.reference_rows_[kept[sample]])
        else:  # a reference row's transform is its fitted coordinates (to the eigensolver's 1e-10)
            before = fitted[kept[sample]] @ self.rotation_ + self.offset_
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
            self.epsilon_ = self._epsilon(dist)  # "auto": the fit's rule on the new reference set
            raw = self._solve(upd.indices, dist, warm)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)  # a refused update leaves the model as it was
            raise
        self.rotation_, self.offset_ = rigid_alignment(raw[sample], before)
        self.reference_embedding_ = raw
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
        method = self._fitted("neighbor_method_", lambda: self.neighbor_method)
        index = NeighborIndex(metric, method, self.seed_, queried=True)
        # The reference rows' radii: an approximate index searches again a row that lands beyond them.
        index.fit(self.reference_rows_).set_radii(
            self.neighbor_radius_, int(self._fitted("n_neighbors_", lambda: self.n_neighbors))
        )
        k_query = min(len(self.reference_rows_), int(self.max_degree_) + 2)
        return NystromExtension(
            index=index,
            W=self._kernel_matrix(),
            k=int(self._fitted("n_neighbors_", lambda: self.n_neighbors)),
            k_query=k_query,
            radius=self.neighbor_radius_,
            q=self.degrees_,
            kernel=self._fitted("kernel_", lambda: self._kernel),
            epsilon=self.epsilon_,
            self_loops=self._self_loops,
            alpha=float(self._fitted("alpha_", self._alpha)),
            kind=self._fitted("operator_", lambda: self._kind),
            phi=self.eigenvectors_,
            mu=self._fitted("extension_eigenvalues_", lambda: self.laplacian_eigenvalues_),
            scale=self._fitted("scale_", lambda: self._scale(self.laplacian_eigenvalues_)),
            reference=self.reference_rows_,
            metric=metric,
            rotation=self.__dict__.get("rotation_"),
            offset=self.__dict__.get("offset_"),
            scales=self.__dict__.get("local_scales_"),
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
        key = model_key(ext, ext.key)
        ratio = da.map_blocks(ratio_block, Xd, key, drop_axis=1, dtype=np.float64, meta=np.empty((0,)))
        return compute(ratio)[0] if wants_numpy(X) else ratio

    def _kernel_matrix(self) -> sp.csr_matrix:
        """The reference rows' affinity (kept as CSR arrays so that models persist without pickle)."""
        n = len(self.reference_rows_)
        return sp.csr_matrix((self.affinity_data_, self.affinity_indices_, self.affinity_indptr_), shape=(n, n))

    def _graph_rows(self) -> int:
        return self.n_samples_seen_ if self.mode_ in ("partitioned", "affinity") else len(self.reference_rows_)

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
